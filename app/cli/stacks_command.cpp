// memscope-cli stacks TRACE [--at peak|TIME] [--device N] [--folded]
// The stacks alive at a moment, for flame graphs.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "memscope/analysis/live_stacks.h"
#include "memscope/base/text_escape.h"
#include "memscope/report/stacks_report.h"

namespace memscope::cli {
namespace {

struct StacksOptions {
    std::string path;
    std::string at = "peak";
    std::optional<int> device;
    bool folded = false;
};

// "2.5", "2.5s", "1500ms": seconds since the device's first event.
std::optional<double> parseSeconds(const std::string& text) {
    if (text.empty()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const std::string unit(end);
    if (end == text.c_str() || !(v >= 0) || v > 1e9) return std::nullopt;
    if (unit.empty() || unit == "s") return v;
    if (unit == "ms") return v / 1e3;
    if (unit == "us") return v / 1e6;
    return std::nullopt;
}

int run(const StacksOptions& o) {
    std::optional<double> seconds;
    if (o.at != "peak") {
        seconds = parseSeconds(o.at);
        if (!seconds) {
            std::fprintf(stderr,
                         "memscope-cli stacks: --at %s: give peak, or a time since the device's "
                         "first event (2.5, 2.5s, 1500ms)\n",
                         o.at.c_str());
            return 1;
        }
    }
    auto opened = openWithProgress(o.path);
    if (!opened) {
        std::fprintf(stderr, "memscope-cli stacks: %s\n", terminalText(opened.message()).c_str());
        return 2;
    }
    printWarnings("stacks", *opened);
    if (opened->parts.size() != 1) {
        std::fprintf(stderr, "memscope-cli stacks: %s holds %zu traces; give one of its files\n",
                     terminalText(o.path).c_str(), opened->parts.size());
        return 2;
    }
    const OpenedTrace& part = opened->parts.front();
    const std::optional<int16_t> device =
        o.device ? std::optional<int16_t>(int16_t(*o.device)) : std::nullopt;
    std::optional<int64_t> time;
    if (seconds) {
        const DeviceTimeline* tl =
            device ? part.timeline->device(*device) : part.timeline->highestPeakDevice();
        if (tl) time = timeFromStart(*part.trace, *tl, *seconds);
    }
    auto stacks = liveStacks(*part.trace, *part.timeline, device, time);
    if (!stacks) {
        std::fprintf(stderr, "memscope-cli stacks: %s: %s\n", terminalText(o.path).c_str(),
                     terminalText(stacks.message()).c_str());
        return 2;
    }
    std::fputs(
        o.folded ? toFolded(*stacks).c_str() : liveStacksText(*part.trace, *stacks, 20).c_str(),
        stdout);
    return 0;
}

}  // namespace

Command addStacks(CLI::App& parent) {
    auto o = std::make_shared<StacksOptions>();
    CLI::App* app =
        parent.add_subcommand("stacks", "the stacks alive at a moment, folded for flame graphs");
    app->add_option("file", o->path, "a trace file")->required();
    app->add_option("--at", o->at,
                    "peak (the default), or a time since the device's first event: 2.5, "
                    "2.5s, 1500ms (the event index for traces without a clock)");
    app->add_option("--device", o->device,
                    "this device (-1 = host); default: the one with the highest peak");
    app->add_flag("--folded", o->folded,
                  "print folded stacks (frame;frame;frame BYTES), as flamegraph.pl and "
                  "speedscope read them");
    app->footer(
        "Every allocation live on the device at the moment, grouped by its stack (the\n"
        "allocator's, dispatcher's and interpreter's frames left out), with its bytes.\n"
        "--folded prints one line per distinct stack, root first:\n"
        "  train  (train.py:40);forward  (model.py:12) 2097152\n"
        "Allocations without a stack fall under one \"(no stack)\" frame, so the lines add\n"
        "up to the live bytes at that moment. Without --folded: the 20 largest stacks.\n"
        "  memscope-cli stacks run.memscope --folded > peak.folded\n"
        "  flamegraph.pl peak.folded > peak.svg   (or open peak.folded in speedscope)\n\n"
        "Exit status: 0 printed, 1 usage error, 2 the trace could not be read or lacks the\n"
        "device or the time.");
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
