// memscope-cli whatif TRACE [--policy P]... [--allocator CONF] [--device-memory SIZE]
//                     [--budget SIZE] [--json] [--out DIR]
//
// Predicts, from one measured full-save run, what each checkpointing policy
// would do to memory (core's whatif.h), and optionally writes the predicted
// runs as native traces that compare, check and the GUI open like any run.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "memscope/format/native_format.h"
#include "memscope/report/whatif_report.h"
#include "memscope/whatif/whatif.h"

namespace memscope::cli {
namespace {

struct WhatIfCliOptions {
    std::string path;
    std::vector<std::string> policies;
    std::string budget;
    std::string allocator;
    std::string device_memory;
    std::string out;
    std::string use_reentrant = "auto";
    bool json = false;
};

// "<measured file stem>-<policy>.predicted.memscope" in DIR.
std::string predictedPath(const std::string& dir, const std::string& source, const WhatIfRow& row) {
    std::string stem = row.policy;
    for (char& c : stem)
        if (c == ':' || c == ',' || c == '/' || c == '+') c = c == '+' ? '+' : '-';
    const std::string base = std::filesystem::path(source).stem().string();
    return (std::filesystem::path(dir) / (base + "-" + stem + ".predicted.memscope")).string();
}

int run(const WhatIfCliOptions& o) {
    auto policies = parseWhatIfPolicies(o.policies);
    if (!policies) {
        std::fprintf(stderr, "memscope-cli whatif: %s\n(policies: %s)\n",
                     terminalText(policies.message()).c_str(),
                     std::string(whatIfPolicyHelp()).c_str());
        return 1;
    }
    std::optional<int64_t> budget;
    if (!o.budget.empty()) {
        auto b = parseByteSize(o.budget);
        if (!b) {
            std::fprintf(stderr, "memscope-cli whatif: --budget: %s\n",
                         terminalText(b.message()).c_str());
            return 1;
        }
        budget = *b;
    }
    std::optional<int64_t> device_memory;
    if (!o.device_memory.empty()) {
        auto b = parseByteSize(o.device_memory);
        if (!b || *b <= 0) {
            std::fprintf(stderr, "memscope-cli whatif: --device-memory: %s\n",
                         b ? "must be more than 0 bytes" : b.message().c_str());
            return 1;
        }
        device_memory = *b;
    }
    if (!o.allocator.empty()) {
        // Checked before the (long) open; applied on top of the recorded settings below.
        if (auto check = applyAllocatorConf({}, o.allocator); !check) {
            std::fprintf(stderr, "memscope-cli whatif: --allocator: %s\n", check.message().c_str());
            return 1;
        }
    }
    if (!o.out.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(o.out, ec);
        if (ec) {
            std::fprintf(stderr, "memscope-cli whatif: --out %s: %s\n", o.out.c_str(),
                         terminalText(ec.message()).c_str());
            return 2;
        }
    }
    auto opened = openWithProgress(o.path);
    if (!opened) {
        std::fprintf(stderr, "memscope-cli whatif: %s\n", terminalText(opened.message()).c_str());
        return 2;
    }
    printWarnings("whatif", *opened);
    if (opened->parts.size() != 1) {
        std::fprintf(stderr,
                     "memscope-cli whatif: %s holds %zu traces; give one rank's trace (one "
                     "process's memory)\n",
                     terminalText(o.path).c_str(), opened->parts.size());
        return 2;
    }
    const OpenedTrace& part = opened->parts.front();
    TaskContext ctx;
    const bool tty = isatty(STDERR_FILENO);
    if (tty)
        ctx.progress = [](uint64_t done, uint64_t total) {
            showProgress("memscope-cli whatif: predicting " + std::to_string(done) + "/" +
                         std::to_string(total));
            if (done == total) clearProgress();
        };
    WhatIfOptions options;
    options.keep_traces = !o.out.empty();
    options.checkpoint_style = o.use_reentrant == "true"    ? CheckpointStyle::Reentrant
                               : o.use_reentrant == "false" ? CheckpointStyle::NonReentrant
                                                            : CheckpointStyle::Auto;
    if (!o.allocator.empty())
        options.allocator_settings =
            *applyAllocatorConf(allocatorSettingsOf(*part.trace).settings, o.allocator);
    if (device_memory) options.device_capacity = uint64_t(*device_memory);
    auto report = whatIf(*part.trace, *part.timeline, o.path, *policies, options, ctx);
    if (!report) {
        std::fprintf(stderr, "memscope-cli whatif: %s: %s\n", terminalText(o.path).c_str(),
                     terminalText(report.message()).c_str());
        return 2;
    }
    std::vector<std::string> written(report->rows.size());
    for (size_t i = 0; i < report->rows.size(); ++i) {
        const WhatIfRow& row = report->rows[i];
        if (!row.trace) continue;
        const std::string file = predictedPath(o.out, o.path, row);
        auto w = writeNativeTrace(*row.trace, file);
        if (!w) {
            std::fprintf(stderr, "memscope-cli whatif: writing %s: %s\n", file.c_str(),
                         terminalText(w.message()).c_str());
            return 2;
        }
        written[i] = file;
    }
    std::optional<WhatIfBudget> fit;
    if (budget) fit = whatIfBudget(*report, *budget);
    if (o.json) {
        std::fputs(whatIfJson(*report, fit, written).c_str(), stdout);
    } else {
        std::fputs(whatIfText(*report, fit).c_str(), stdout);
        for (const std::string& f : written)
            if (!f.empty()) std::printf("  wrote %s\n", f.c_str());
    }
    return 0;
}

}  // namespace

Command addWhatIf(CLI::App& parent) {
    auto o = std::make_shared<WhatIfCliOptions>();
    CLI::App* app = parent.add_subcommand(
        "whatif", "predict each checkpointing policy's memory from one measured full-save run");
    app->add_option("trace", o->path, "a full-save run: a trace file (one process)")->required();
    app->add_option(
        "--policy", o->policies,
        "a policy to predict (repeatable, or a comma list): " + std::string(whatIfPolicyHelp()) +
            "; default: every policy the trace's layers allow");
    app->add_option("--budget", o->budget,
                    "name the fastest policy predicted to fit SIZE (2.5GiB, 800MB)")
        ->check(byteSizeValidator());
    app->add_option("--allocator", o->allocator,
                    "replay under other caching-allocator settings, in PYTORCH_CUDA_ALLOC_CONF's "
                    "syntax (expandable_segments:True, max_split_size_mb:512, "
                    "roundup_power2_divisions:4, garbage_collection_threshold:0.8), on top of "
                    "the recorded ones; with --policy, both");
    app->add_option("--device-memory", o->device_memory,
                    "the bytes the allocator may reserve (e.g. 24GiB): the first request that "
                    "would fail is reported")
        ->check(byteSizeValidator());
    app->add_option("--use-reentrant", o->use_reentrant,
                    "how the checkpoint is made, as torch.utils.checkpoint's use_reentrant: "
                    "false (the recomputed output is freed when the recompute ends), true "
                    "(it is held until the region's backward ends), or auto (default: true "
                    "for sequential:K, as checkpoint_sequential, and for memscope-train's runs; "
                    "false otherwise, as PyTorch recommends)")
        ->check(CLI::IsMember({"auto", "true", "false"}));
    app->add_flag("--json", o->json, "print JSON");
    app->add_option("--out", o->out,
                    "write each predicted run to DIR as a native trace (compare, check and the "
                    "GUI open them; they are marked predicted)");
    app->footer(
        std::string(whatIfPolicyMeanings()) +
        "Predicted runs are simulations of the measured run, never measurements; each lists the "
        "assumptions it made. On a GPU run, reserved memory is the caching-allocator model's "
        "(the recorded settings, else PyTorch's defaults) and --budget judges it.\nExit status: 0 "
        "predicted, 1 usage error, 2 the run could not be "
        "read or predicted from.");
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
