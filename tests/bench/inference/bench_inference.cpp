// memscope-bench-inference: how well memscope labels a trace that carries no
// labels. Each trainer run (mlp and gpt under full, block, selective and
// opt-in-bwd) is exported as a plain PyTorch snapshot without its categories
// and phases, loaded back and inferred; the table gives the share of bytes in
// their true category at the peak and over the whole run, and the steps found
// against the steps run. With --snapshot FILE, also the cost of inference on
// that snapshot's load (import + timeline with and without inference).
//   memscope-bench-inference [--steps N] [--snapshot FILE]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "config.h"
#include "ground_truth.h"
#include "memscope/base/units.h"
#include "memscope/builtin_plugins.h"
#include "memscope/format/native_format.h"
#include "memscope/inference/inference.h"
#include "memscope/open/open_run.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "trainer.h"

using namespace memscope;
namespace fs = std::filesystem;

namespace {

int groundTruth(int steps) {
    const fs::path dir =
        fs::temp_directory_path() / ("memscope-bench-inference-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::printf("%-22s %8s %10s %9s %9s  %s\n", "run", "steps", "peak", "at peak", "timeline",
                "largest misses at the peak");
    int failures = 0;
    for (const char* model : {"mlp", "gpt"}) {
        trainer::TrainConfig config;
        config.steps = steps;
        auto m = trainer::preset(
            std::string_view(model) == "mlp" ? trainer::ModelKind::Mlp : trainer::ModelKind::Gpt,
            "quick");
        if (!m) return std::fprintf(stderr, "%s\n", m.message().c_str()), 2;
        config.model = *m;
        auto policies = trainer::parsePolicies("all");
        for (const trainer::Policy& policy : *policies) {
            const std::string name = std::string(model) + "-" + trainer::policyFileStem(policy);
            trainer::RunOptions options;
            options.trace_path = (dir / (name + ".memscope")).string();
            auto run = trainer::runPolicy(config, policy, options);
            if (!run)
                return std::fprintf(stderr, "%s: %s\n", name.c_str(), run.message().c_str()), 2;
            auto labelled = importNativeTrace(options.trace_path);
            if (!labelled) return std::fprintf(stderr, "%s\n", labelled.message().c_str()), 2;
            auto score =
                ground_truth::scoreInference(*labelled, (dir / (name + ".pickle")).string());
            if (!score)
                return std::fprintf(stderr, "%s: %s\n", name.c_str(), score.message().c_str()), 2;
            const bool ok = score->peak_correct >= 0.9 && score->steps_found == size_t(steps);
            failures += !ok;
            std::printf("%-22s %3zu of %-2d %10s %8.1f%% %8.1f%%  %s%s\n", name.c_str(),
                        score->steps_found, steps, formatBytes(score->peak_bytes).c_str(),
                        100 * score->peak_correct, 100 * score->timeline_correct,
                        score->wrong.empty() ? "-" : score->wrong.c_str(),
                        ok ? "" : "  (below target)");
        }
    }
    fs::remove_all(dir);
    std::printf("target: >= 90%% of peak bytes in the right category and every step found: %s\n",
                failures ? "NOT met" : "met");
    return failures ? 1 : 0;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int inferenceCost(const std::string& file) {
    // Best of three of each, interleaved.
    double with = 1e9, without = 1e9, import_only = 1e9;
    InferenceReport report;
    for (int round = 0; round < 3; ++round) {
        for (bool infer : {false, true}) {
            const auto t0 = std::chrono::steady_clock::now();
            auto trace = pytorch_snapshot::importFile(file);
            if (!trace) return std::fprintf(stderr, "%s\n", trace.message().c_str()), 2;
            import_only = std::min(import_only, secondsSince(t0));
            if (infer) report = inferMissingLabels(*trace);
            auto tl = Timeline::build(*trace);
            if (!tl) return std::fprintf(stderr, "%s\n", tl.message().c_str()), 2;
            (infer ? with : without) = std::min(infer ? with : without, secondsSince(t0));
        }
    }
    std::printf(
        "\n%s\n  load (import + timeline) %.3f s, with inference %.3f s: +%.1f%% "
        "(import alone %.3f s)\n  steps %zu (%s), categories inferred for %llu "
        "allocations, %llu left unknown\n  target: inference adds <= 25%%: %s\n",
        file.c_str(), without, with, 100 * (with - without) / without, import_only, report.steps,
        std::string(toString(report.steps_source)).c_str(),
        static_cast<unsigned long long>(report.categories_inferred),
        static_cast<unsigned long long>(report.categories_unknown),
        with <= 1.25 * without ? "met" : "NOT met");
    return with <= 1.25 * without ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    int steps = 3;
    std::string snapshot;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
            steps = std::max(2, std::atoi(argv[++i]));
        } else if (!std::strcmp(argv[i], "--snapshot") && i + 1 < argc) {
            snapshot = argv[++i];
        } else {
            std::printf(
                "usage: memscope-bench-inference [--steps N] [--snapshot FILE]\n"
                "  the trainer's 8 runs, unlabelled, against their labels; with "
                "--snapshot, the cost of inference on loading FILE\n");
            return std::strcmp(argv[i], "--help") ? 1 : 0;
        }
    }
    int rc = groundTruth(steps);
    if (!snapshot.empty()) rc = std::max(rc, inferenceCost(snapshot));
    return rc;
}
