#include "memory_viz_page.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace memscope::pytorch_snapshot {
namespace {

std::string_view textOf(std::span<const std::byte> bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f';
}

size_t skipSpace(std::string_view s, size_t i) {
    while (i < s.size() && isSpace(s[i])) ++i;
    return i;
}

// A quoted JavaScript string of at most `limit` characters starting at s[i]
// (its opening quote), without escapes; empty when there is none.
std::string quotedAt(std::string_view s, size_t i, size_t limit = 256) {
    if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) return {};
    const size_t close = s.substr(i + 1, limit + 1).find(s[i]);
    return close == std::string_view::npos ? std::string() : std::string(s.substr(i + 1, close));
}

// Where the value of the key `"base64"` (or 'base64') found at `key` starts:
// the offset just after its opening quote, or npos when `key` is not followed
// by `: "` (a mention of the word in the page, not the key).
size_t valueAfterKey(std::string_view page, size_t key, char& quote) {
    size_t i = skipSpace(page, key + 8);  // 8 = the quoted key
    if (i >= page.size() || page[i] != ':') return std::string_view::npos;
    i = skipSpace(page, i + 1);
    if (i >= page.size() || (page[i] != '"' && page[i] != '\'')) return std::string_view::npos;
    quote = page[i];
    return i + 1;
}

// The next `"base64": "` or `'base64': '` at or after `from`.
size_t nextPayload(std::string_view page, size_t from, size_t& key, char& quote) {
    for (size_t i = from; i < page.size();) {
        const size_t hit = page.find("base64", i);
        if (hit == std::string_view::npos) return std::string_view::npos;
        i = hit + 6;
        if (hit == 0 || hit + 7 > page.size()) continue;
        const char open = page[hit - 1];
        if ((open != '"' && open != '\'') || page[hit + 6] != open) continue;
        const size_t value = valueAfterKey(page, hit - 1, quote);
        if (value == std::string_view::npos) continue;
        key = hit - 1;
        return value;
    }
    return std::string_view::npos;
}

// "name" of the file object holding the key: looked for between the object's
// '{' and the key (torch writes it first), a short way back.
std::string nameBefore(std::string_view page, size_t key) {
    const size_t from = key > 4096 ? key - 4096 : 0;
    const std::string_view before = page.substr(from, key - from);
    const size_t brace = before.rfind('{');
    if (brace == std::string_view::npos) return {};
    const std::string_view object = before.substr(brace);
    for (const char q : {'"', '\''}) {
        const std::string needle = std::string(1, q) + "name" + q;
        const size_t n = object.find(needle);
        if (n == std::string_view::npos) continue;
        size_t i = skipSpace(object, n + needle.size());
        if (i < object.size() && object[i] == ':')
            return quotedAt(object, skipSpace(object, i + 1));
    }
    return {};
}

// The view named in `add_local_files(local_files, 'Active Memory Timeline')`.
std::string viewAfter(std::string_view page, size_t from) {
    const std::string_view rest =
        page.substr(from, std::min<size_t>(page.size() - from, 64 * 1024));
    const size_t call = rest.find("add_local_files(");
    if (call == std::string_view::npos) return {};
    const size_t comma = rest.find(',', call);
    if (comma == std::string_view::npos || comma - call > 256) return {};
    return quotedAt(rest, skipSpace(rest, comma + 1), 128);
}

}  // namespace

bool looksLikeHtml(std::span<const std::byte> head) {
    std::string_view s = textOf(head.first(std::min<size_t>(head.size(), 4096)));
    if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);
    for (size_t i = skipSpace(s, 0); i < s.size(); i = skipSpace(s, i)) {
        if (s.substr(i, 4) == "<!--") {  // a comment before the page: skip it
            const size_t end = s.find("-->", i + 4);
            if (end == std::string_view::npos) return false;
            i = end + 3;
            continue;
        }
        const std::string start = lowered(s.substr(i, 16));
        for (std::string_view tag :
             {"<!doctype html", "<html", "<head", "<body", "<script", "<meta"})
            if (start.starts_with(tag)) return true;
        return false;
    }
    return false;
}

bool mentionsMemoryViz(std::span<const std::byte> head) {
    const std::string_view s = textOf(head);
    return s.find("MemoryViz.js") != std::string_view::npos ||
           s.find("add_local_files") != std::string_view::npos;
}

Result<PagePayload> findPayload(std::span<const std::byte> page) {
    const std::string_view text = textOf(page);
    size_t key = 0;
    char quote = '"';
    const size_t begin = nextPayload(text, 0, key, quote);
    if (begin == std::string_view::npos) {
        if (text.find("\"elements_size\"") != std::string_view::npos &&
            text.find("\"suffix_table\"") != std::string_view::npos)
            return makeError(
                "this HTML page is torch 2.0's trace_plot, which embeds the plot's drawing data, "
                "not the snapshot; make the page with torch 2.1 or later, or open the snapshot "
                "pickle itself (torch.cuda.memory._dump_snapshot)");
        std::string why =
            "this is an HTML page but holds no memory_viz snapshot (no \"base64\" payload in it); "
            "memscope reads the pages torch.cuda._memory_viz trace_plot and segment_plot write "
            "(torch 2.1 and later), or open the snapshot pickle itself";
        if (text.find(";base64,") != std::string_view::npos)
            why +=
                ". Its base64 is a picture: torch.profiler's export_memory_timeline writes such "
                "pages; export the timeline as .json to open it with memscope";
        return makeError(why);
    }
    const size_t end = text.find(quote, begin);
    if (end == std::string_view::npos)
        return makeError("the page's embedded snapshot is cut short: its base64 text (" +
                         std::to_string(text.size() - begin) +
                         " bytes from where it starts) has no closing quote; the page was "
                         "probably truncated, ask for the whole file");
    if (end == begin) return makeError("the page's embedded snapshot is empty (\"base64\": \"\")");
    PagePayload p;
    p.begin = begin;
    p.end = end;
    p.file_name = nameBefore(text, key);
    size_t next_key = 0;
    char next_quote = '"';
    p.more_files = nextPayload(text, end + 1, next_key, next_quote) != std::string_view::npos;
    p.view = viewAfter(text, end + 1);
    return p;
}

}  // namespace memscope::pytorch_snapshot
