#include "cli_common.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "memscope/base/file_io.h"
#include "memscope/base/text_escape.h"
#include "memscope/builtin_plugins.h"
#include "memscope/ranks/open_ranks.h"
#include "memscope/report/summary_report.h"

namespace memscope::cli {

namespace {

// A stream over a file descriptor that writes what it is given through
// terminalText. A UTF-8 sequence cut between two writes is held back until
// the next one (or the close), so a cut is not mistaken for invalid bytes.
struct EscapingStream {
    int fd;
    std::string held;
};

void writeAll(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text.remove_prefix(size_t(n));
    }
}

// Where an incomplete UTF-8 sequence starts in the last three bytes, or size.
size_t incompleteTail(std::string_view s) {
    for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
        const auto c = static_cast<unsigned char>(s[s.size() - back]);
        if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
        const size_t need = (c & 0xE0) == 0xC0   ? 2
                            : (c & 0xF0) == 0xE0 ? 3
                            : (c & 0xF8) == 0xF0 ? 4
                                                 : 1;
        return need > back ? s.size() - back : s.size();
    }
    return s.size();
}

ssize_t escapingWrite(void* cookie, const char* buf, size_t size) {
    auto* stream = static_cast<EscapingStream*>(cookie);
    stream->held.append(buf, size);
    const size_t cut = incompleteTail(stream->held);
    writeAll(stream->fd,
             terminalText(std::string_view(stream->held).substr(0, cut), TextLines::Keep));
    stream->held.erase(0, cut);
    return ssize_t(size);
}

int escapingClose(void* cookie) {
    auto* stream = static_cast<EscapingStream*>(cookie);
    if (!stream->held.empty()) writeAll(stream->fd, terminalText(stream->held, TextLines::Keep));
    delete stream;
    return 0;
}

FILE* escapingStream(FILE* original, int fd, int buffering) {
    std::fflush(original);
    cookie_io_functions_t io{};
    io.write = escapingWrite;
    io.close = escapingClose;
    FILE* f = fopencookie(new EscapingStream{fd, {}}, "w", io);
    if (!f) return original;
    std::setvbuf(f, nullptr, buffering, buffering == _IONBF ? 0 : 1 << 16);
    return f;
}

}  // namespace

void escapeStandardStreams() {
    stdout = escapingStream(stdout, STDOUT_FILENO, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF);
    stderr = escapingStream(stderr, STDERR_FILENO, _IONBF);
}

void showProgress(const std::string& text) {
    std::fflush(stderr);
    writeAll(STDERR_FILENO, "\r" + terminalText(text));
}

void clearProgress() {
    std::fflush(stderr);
    writeAll(STDERR_FILENO, "\r\033[K");
}

const PluginRegistry& registry() {
    static const bool reported = [] {
        for (const auto& e : processPluginReport().errors)
            std::fprintf(stderr, "memscope-cli: plugin skipped: %s\n", e.c_str());
        return true;
    }();
    (void)reported;
    return processRegistry();
}

namespace {

// "\rLABEL: 42%" on stderr, at most five times a second.
std::function<void(uint64_t, uint64_t)> progressLine(std::string label) {
    auto last = std::chrono::steady_clock::now();
    return [label = std::move(label), last](uint64_t done, uint64_t total) mutable {
        const auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::milliseconds(200) && done < total) return;
        last = now;
        char percent[16];
        std::snprintf(percent, sizeof percent, ": %3d%%", total ? int(done * 100 / total) : 0);
        showProgress(label + percent);
    };
}

}  // namespace

Result<OpenedRun> openWithProgress(const std::string& path, const OpenOptions& options) {
    std::error_code ec;
    // A pipe or FIFO would be read twice (probe, then load): refuse it clearly.
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec))
        if (auto regular = requireRegularFile(path); !regular) return regular.error();
    const auto size =
        std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
    const bool show = !ec && size > (64u << 20) && isatty(STDERR_FILENO);
    TaskContext ctx;
    if (show) ctx.progress = progressLine("loading " + path);
    auto run = openRun(path, registry(), ctx, options);
    if (show) clearProgress();
    return run;
}

bool isMultiRankFolder(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec) && traceFilesIn(path, registry()).size() > 1;
}

Result<RankRun> openRanksWithProgress(const char* command, const std::string& path) {
    const bool show = isatty(STDERR_FILENO);
    TaskContext ctx;
    if (show) ctx.progress = progressLine("loading the ranks of " + path);
    auto run = openRanks(path, registry(), ctx);
    if (show) clearProgress();
    if (run) {
        for (const RankFailure& f : run->failures)
            std::fprintf(stderr, "memscope-cli %s: rank not read: %s\n", command,
                         terminalText(f.message).c_str());
        for (const LoadWarning& w : run->warnings)
            std::fprintf(stderr, "memscope-cli %s: warning: %s\n", command,
                         terminalText(w.message).c_str());
    }
    return run;
}

RunLabel runLabel(const OpenedTrace& part) {
    RunLabel label;
    label.name = part.trace ? part.trace->metadata.name : std::string();
    if (label.name.empty()) label.name = std::filesystem::path(part.path).stem().string();
    label.pid = part.trace ? part.trace->metadata.pid : -1;
    label.path = part.path;
    label.predicted = part.trace && part.trace->prediction;
    if (part.trace)
        if (const std::string* applied = part.trace->metadata.property("applied_policy"))
            label.applied_policy = *applied;
    return label;
}

RunLabel runLabel(const OpenedRun& run) {
    RunLabel label;
    label.name = run.name;
    if (run.parts.size() == 1 && run.parts.front().trace)
        label.pid = run.parts.front().trace->metadata.pid;
    label.path = run.path;
    for (const OpenedTrace& part : run.parts) {
        label.predicted |= part.trace && part.trace->prediction;
        if (part.trace && label.applied_policy.empty())
            if (const std::string* applied = part.trace->metadata.property("applied_policy"))
                label.applied_policy = *applied;
    }
    return label;
}

void printWarnings(const char* command, const OpenedRun& run) {
    for (const OpenedTrace& part : run.parts)
        for (const LoadWarning& w : part.warnings)
            std::fprintf(stderr, "memscope-cli %s: warning: %s: %s\n", command,
                         terminalText(part.path).c_str(), terminalText(w.message).c_str());
}

// "recorded only steps 3-4 ... alive at its start: ..." for a trace cut to
// what `record --steps` / `--capture-range` asked for.
void printRecordedRange(const Trace& t, const char* indent) {
    std::fputs(recordedRangeText(t, indent).c_str(), stdout);
}

}  // namespace memscope::cli
