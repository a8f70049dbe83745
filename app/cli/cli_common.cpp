#include "cli_common.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "memscope/base/file_io.h"
#include "memscope/builtin_plugins.h"
#include "memscope/ranks/open_ranks.h"
#include "memscope/report/summary_report.h"

namespace memscope::cli {

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
        std::fprintf(stderr, "\r%s: %3d%%", label.c_str(), total ? int(done * 100 / total) : 0);
        std::fflush(stderr);
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
    if (show) std::fprintf(stderr, "\r\033[K");
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
    if (show) std::fprintf(stderr, "\r\033[K");
    if (run) {
        for (const RankFailure& f : run->failures)
            std::fprintf(stderr, "memscope-cli %s: rank not read: %s\n", command,
                         f.message.c_str());
        for (const LoadWarning& w : run->warnings)
            std::fprintf(stderr, "memscope-cli %s: warning: %s\n", command, w.message.c_str());
    }
    return run;
}

RunLabel runLabel(const OpenedTrace& part) {
    RunLabel label;
    label.name = part.trace ? part.trace->metadata.name : std::string();
    if (label.name.empty()) label.name = std::filesystem::path(part.path).stem().string();
    label.pid = part.trace ? part.trace->metadata.pid : -1;
    label.path = part.path;
    return label;
}

RunLabel runLabel(const OpenedRun& run) {
    RunLabel label;
    label.name = run.name;
    if (run.parts.size() == 1 && run.parts.front().trace)
        label.pid = run.parts.front().trace->metadata.pid;
    label.path = run.path;
    return label;
}

void printWarnings(const char* command, const OpenedRun& run) {
    for (const OpenedTrace& part : run.parts)
        for (const LoadWarning& w : part.warnings)
            std::fprintf(stderr, "memscope-cli %s: warning: %s: %s\n", command, part.path.c_str(),
                         w.message.c_str());
}

// "recorded only steps 3-4 ... alive at its start: ..." for a trace cut to
// what `record --steps` / `--capture-range` asked for.
void printRecordedRange(const Trace& t, const char* indent) {
    std::fputs(recordedRangeText(t, indent).c_str(), stdout);
}

}  // namespace memscope::cli
