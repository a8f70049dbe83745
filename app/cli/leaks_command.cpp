// memscope-cli leaks TRACE [--json]
// What grows step after step, and which allocations pile up.
#include <cstdio>
#include <memory>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "memscope/analysis/leak_finder.h"
#include "memscope/base/text_escape.h"
#include "memscope/report/leak_report.h"

namespace memscope::cli {
namespace {

struct LeaksOptions {
    std::string path;
    bool json = false;
};

int run(const LeaksOptions& o) {
    auto opened = openWithProgress(o.path);
    if (!opened) {
        std::fprintf(stderr, "memscope-cli leaks: %s\n", terminalText(opened.message()).c_str());
        return 2;
    }
    printWarnings("leaks", *opened);
    if (opened->parts.size() != 1) {
        std::fprintf(stderr, "memscope-cli leaks: %s holds %zu traces; give one of its files\n",
                     terminalText(o.path).c_str(), opened->parts.size());
        return 2;
    }
    const OpenedTrace& part = opened->parts.front();
    const LeakReport report =
        findLeaks(*part.trace, *part.timeline, ModuleAttribution(*part.trace));
    std::fputs(o.json ? leaksJson(report).c_str() : leaksText(report).c_str(), stdout);
    return 0;
}

}  // namespace

Command addLeaks(CLI::App& parent) {
    auto o = std::make_shared<LeaksOptions>();
    CLI::App* app = parent.add_subcommand(
        "leaks", "memory that grows step after step, and the allocations that pile up");
    app->add_option("file", o->path, "a trace file")->required();
    app->add_flag("--json", o->json, "print JSON");
    app->footer(
        "Per device: the live bytes at the end of each training step (steps recorded, or\n"
        "inferred and said so), the growth per step (a least-squares fit over the steady\n"
        "steps: the first step, the first two from six steps on, and the steps that still\n"
        "settle after them are warm-up), and, when it grows, the allocations born in a\n"
        "steady step and still alive at the end that pile up step after step, grouped by\n"
        "layer (module) and site (the first user frame): bytes and count per step, the stack\n"
        "that made them and the step since which they do. Parameters, optimizer state born\n"
        "in the first step and a cache that reaches a plateau are not growth: \"no growth\".\n"
        "It needs 4 steps or more. `summary` prints the growth in one line, `check\n"
        "--max-growth-per-step SIZE` gates it.\n\n"
        "Exit status: 0 printed (growth or not), 1 usage error, 2 the trace could not be\n"
        "read.");
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
