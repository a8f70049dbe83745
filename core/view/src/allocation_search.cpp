#include "memscope/view/allocation_search.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

namespace memscope {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// An address query: "0x7f..." (hex) or all decimal digits.
bool parseAddress(std::string_view q, uint64_t& out) {
    int base = 10;
    if (q.size() > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
        q.remove_prefix(2);
        base = 16;
    }
    const auto [end, ec] = std::from_chars(q.data(), q.data() + q.size(), out, base);
    return ec == std::errc() && end == q.data() + q.size();
}

char lowerAscii(char c) {
    return char(std::tolower(static_cast<unsigned char>(c)));
}

bool containsFolded(std::string_view haystack, const std::string& needle) {
    if (needle.empty()) return true;
    return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                       [](char a, char b) { return lowerAscii(a) == b; }) != haystack.end();
}

}  // namespace

SearchResult searchAllocations(const Trace& trace, const DeviceTimeline& tl, std::string_view query,
                               size_t limit, const std::atomic<bool>* cancel) {
    SearchResult out;
    const std::string_view q = trim(query);
    if (q.empty()) return out;
    auto stopped = [&](size_t i) {
        return (i & 0xffff) == 0 && cancel && cancel->load(std::memory_order_relaxed);
    };

    std::vector<uint32_t> hits;
    uint64_t address = 0;
    if (parseAddress(q, address)) {
        for (uint32_t i = 0; i < tl.intervals.size(); ++i) {
            if (stopped(i)) return out;
            const AllocationInterval& a = tl.intervals[i];
            const uint64_t size = std::max<uint64_t>(a.size, 1);
            if (address >= a.address && address - a.address < size) hits.push_back(i);
        }
    } else {
        std::string needle(q);
        for (char& c : needle) c = lowerAscii(c);
        std::vector<char> frameMatch(trace.frames().size() + 1, 0);
        for (size_t f = 0; f < trace.frames().size(); ++f) {
            if (stopped(f)) return out;
            const Frame& fr = trace.frames()[f];
            frameMatch[f + 1] = containsFolded(trace.string(fr.function), needle) ||
                                containsFolded(trace.string(fr.file), needle);
        }
        std::vector<char> stackMatch(trace.stackCount(), 0);
        for (uint32_t s = 1; s < trace.stackCount(); ++s)
            for (FrameId f : trace.stack(StackId(s)))
                if (f.value < frameMatch.size() && frameMatch[f.value]) {
                    stackMatch[s] = 1;
                    break;
                }
        for (uint32_t i = 0; i < tl.intervals.size(); ++i) {
            if (stopped(i)) return out;
            const uint32_t s = tl.intervals[i].stack.value;
            if (s < stackMatch.size() && stackMatch[s]) hits.push_back(i);
        }
    }
    out.total_matches = hits.size();
    const size_t keep = std::min(limit, hits.size());
    std::partial_sort(hits.begin(), hits.begin() + ptrdiff_t(keep), hits.end(),
                      [&](uint32_t a, uint32_t b) {
                          return tl.intervals[a].size != tl.intervals[b].size
                                     ? tl.intervals[a].size > tl.intervals[b].size
                                     : a < b;
                      });
    hits.resize(keep);
    out.intervals = std::move(hits);
    return out;
}

std::vector<uint32_t> neighboursByAddress(const DeviceTimeline& timeline, uint32_t interval,
                                          size_t each_side) {
    if (interval >= timeline.intervals.size()) return {};
    std::vector<uint32_t> live = timeline.liveAt(timeline.intervals[interval].start);
    std::sort(live.begin(), live.end(), [&](uint32_t x, uint32_t y) {
        return timeline.intervals[x].address < timeline.intervals[y].address;
    });
    const auto self = std::find(live.begin(), live.end(), interval);
    std::vector<uint32_t> near;
    if (self == live.end()) return near;
    const auto side = ptrdiff_t(each_side);
    const auto from = self - std::min<ptrdiff_t>(side, self - live.begin());
    const auto to = self + 1 + std::min<ptrdiff_t>(side, live.end() - self - 1);
    for (auto it = from; it != to; ++it)
        if (it != self) near.push_back(*it);
    return near;
}

}  // namespace memscope
