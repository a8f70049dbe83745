#include "record_report.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "cli_common.h"
#include "memscope/analysis/summary.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "memscope/timeline/timeline.h"
#include "memscope_cupti/record_env.h"

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;
namespace env = memscope::cupti::env;

bool isTraceName(const std::string& name) {
    const std::string_view prefix = env::kFilePrefix, suffix = env::kFileSuffix;
    return name.size() > prefix.size() + suffix.size() && name.starts_with(prefix) &&
           name.ends_with(suffix);
}

int64_t seriesMax(const StepSeries& s) {
    int64_t best = s.initial;
    for (int64_t y : s.ys()) best = std::max(best, y);
    return best;
}

std::string bytesBoth(int64_t bytes) {
    return formatBytes(bytes) + " (" + std::to_string(bytes) + " B)";
}

void printPhases(const Trace& trace) {
    // Distinct names in order of first appearance: "step 0..9" would be ten.
    std::vector<std::string_view> names;
    std::set<std::string_view> seen;
    for (const Phase& p : trace.phases)
        if (seen.insert(trace.string(p.name)).second) names.push_back(trace.string(p.name));
    if (names.empty()) return;
    std::printf("    phase names    ");
    const size_t shown = std::min<size_t>(names.size(), 12);
    for (size_t i = 0; i < shown; ++i)
        std::printf("%s%s", i ? ", " : "", terminalText(names[i]).c_str());
    if (shown < names.size()) std::printf(", ... (%zu distinct)", names.size());
    std::printf("\n");
}

// Which op made the memory: how many op scopes, or why there are none (the
// hook's hooks.ops says, e.g. the capture library did not load).
void printOps(const Trace& trace) {
    const std::string* how = trace.metadata.property("hook.ops");
    if (!trace.ops.scopes.empty()) {
        const std::string* by = trace.metadata.property("ops");
        std::printf("    ops            %zu op scopes, %s\n", trace.ops.scopes.size(),
                    terminalText(by ? *by : std::string("recorded")).c_str());
    } else if (how) {
        std::printf("    ops            %s\n", terminalText(*how).c_str());
    }
}

}  // namespace

DirectoryState traceFilesIn(const fs::path& dir) {
    DirectoryState state;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (isTraceName(name)) state[name] = it->last_write_time(ec);
    }
    return state;
}

std::vector<fs::path> newTraceFiles(const fs::path& dir, const DirectoryState& before) {
    std::vector<fs::path> files;
    for (const auto& [name, time] : traceFilesIn(dir)) {
        auto it = before.find(name);
        if (it == before.end() || it->second != time) files.push_back(dir / name);
    }
    return files;  // the map kept them sorted by name
}

bool printRecordedTrace(const fs::path& file) {
    auto opened = openWithProgress(file.string());
    if (!opened) {
        std::fprintf(stderr, "memscope-cli record: %s\n", terminalText(opened.message()).c_str());
        return false;
    }
    const OpenedTrace& part = opened->parts.front();
    const Trace& t = *part.trace;
    const Timeline& timeline = *part.timeline;
    std::printf("  %s\n", terminalText(file.string()).c_str());
    std::printf("    %s%spid %lld%s, %zu events, %zu phases, %zu annotations\n",
                terminalText(t.metadata.name).c_str(), t.metadata.name.empty() ? "" : ": ",
                (long long)t.metadata.pid,
                t.metadata.rank >= 0 ? (", rank " + std::to_string(t.metadata.rank)).c_str() : "",
                t.events.size(), t.phases.size(), t.annotations.size());
    for (const LoadWarning& w : part.warnings)
        std::printf("    GAPS           %s\n", terminalText(w.message).c_str());
    if (t.events.empty()) std::printf("    no CUDA memory events in this process\n");

    const TraceSummary summary = summarize(t, timeline);
    for (const DeviceTimeline& d : timeline.devices()) {
        auto s = summary.devices.find(d.device);
        std::printf("    device %d%s\n", d.device, d.device < 0 ? " (host)" : "");
        std::printf("      peak reserved  %s\n", bytesBoth(seriesMax(d.reserved)).c_str());
        if (s != summary.devices.end()) {
            const DeviceSummary& ds = s->second;
            if (ds.alloc_count > 0)
                std::printf("      peak live      %s\n", bytesBoth(ds.peak_active_bytes).c_str());
            std::printf(
                "      events         %llu  (segment_alloc %llu, alloc %llu, free_completed "
                "%llu)\n",
                (unsigned long long)ds.trace_entries, (unsigned long long)ds.segment_alloc_count,
                (unsigned long long)ds.alloc_count, (unsigned long long)ds.free_completed_count);
        }
    }
    printPhases(t);
    printOps(t);
    printRecordedRange(t, "    ");
    return true;
}

}  // namespace memscope::cli
