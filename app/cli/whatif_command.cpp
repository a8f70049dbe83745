// memscope-cli whatif TRACE [--policy P]... [--allocator CONF] [--device-memory SIZE]
//                     [--budget SIZE | --frontier] [--no-opt-in-bwd] [--json] [--out DIR]
// memscope-cli whatif TRACE --emit pytorch POLICY
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
#include "memscope/whatif/advisor.h"
#include "memscope/whatif/policy_modules.h"
#include "memscope/whatif/pytorch_code.h"
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
    bool frontier = false;
    bool no_opt_in_bwd = false;
    std::vector<std::string> emit;  // {"pytorch", POLICY}
};

CheckpointStyle styleOf(const WhatIfCliOptions& o) {
    return o.use_reentrant == "true"    ? CheckpointStyle::Reentrant
           : o.use_reentrant == "false" ? CheckpointStyle::NonReentrant
                                        : CheckpointStyle::Auto;
}

// --emit pytorch POLICY: the code that applies POLICY to the recorded model.
int emitCode(const WhatIfCliOptions& o, const Trace& trace) {
    auto policy = parseWhatIfPolicy(o.emit[1]);
    if (!policy) {
        std::fprintf(stderr, "memscope-cli whatif: --emit: %s\n",
                     terminalText(policy.message()).c_str());
        return 1;
    }
    auto modules = policyModules(*policy, trace, styleOf(o));
    if (!modules) {
        std::fprintf(stderr, "memscope-cli whatif: --emit: %s\n",
                     terminalText(modules.message()).c_str());
        return 2;
    }
    std::fputs(pytorchCode(*modules, {o.path}).c_str(), stdout);
    return 0;
}

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
    if (!o.emit.empty() && (o.emit.size() != 2 || o.emit[0] != "pytorch")) {
        std::fprintf(stderr,
                     "memscope-cli whatif: --emit takes a language and a policy: --emit pytorch "
                     "POLICY\n");
        return 1;
    }
    if (budget && o.frontier) {
        std::fprintf(stderr,
                     "memscope-cli whatif: --budget names the fastest policy that fits; "
                     "--frontier lists them all without a budget: give one of the two\n");
        return 1;
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
    if (!o.emit.empty()) return emitCode(o, *part.trace);
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
    options.checkpoint_style = styleOf(o);
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
    // The advisor searches per-layer mixes where the run has layers.
    std::optional<Advice> advice;
    std::string advice_problem;
    if ((budget || o.frontier) && report->chain) {
        AdvisorOptions a;
        a.whatif = options;
        a.optimizer_in_backward = !o.no_opt_in_bwd;
        TaskContext actx;
        if (tty)
            actx.progress = [](uint64_t done, uint64_t total) {
                showProgress("memscope-cli whatif: advising, " + std::to_string(done) + " of ~" +
                             std::to_string(total) + " runs simulated");
            };
        auto answer = advise(*part.trace, *part.timeline, o.path, budget, a, actx);
        if (tty) clearProgress();
        if (answer)
            advice = std::move(*answer);
        else
            advice_problem = answer.message();
    } else if (budget || o.frontier) {
        advice_problem = "no per-layer mix to search: " + report->chain_problem;
    }
    if (!advice_problem.empty() && !o.json)
        std::fprintf(stderr, "memscope-cli whatif: advisor: %s\n",
                     terminalText(advice_problem).c_str());
    if (o.json) {
        std::fputs(whatIfJson(*report, fit, written, advice ? &*advice : nullptr).c_str(), stdout);
    } else {
        std::fputs(whatIfText(*report, fit, advice ? &*advice : nullptr).c_str(), stdout);
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
                    "search per-layer mixes (each layer: kept, checkpointed, or checkpointed "
                    "with a save list; the optimizer in backward) for the fastest predicted to "
                    "fit SIZE (2.5GiB, 800MB), each answer simulated whole")
        ->check(byteSizeValidator());
    app->add_flag("--frontier", o->frontier,
                  "list the predicted memory/time frontier of per-layer mixes and uniform "
                  "policies");
    app->add_flag("--no-opt-in-bwd", o->no_opt_in_bwd,
                  "the advisor keeps the optimizer after backward (for loops with gradient "
                  "clipping or accumulation)");
    app->add_option("--emit", o->emit,
                    "print the PyTorch code that applies a policy to the recorded model, by "
                    "its module paths: --emit pytorch POLICY")
        ->expected(2);
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
