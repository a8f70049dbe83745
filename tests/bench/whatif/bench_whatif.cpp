// memscope-bench-whatif: the what-if simulator against the trainer's ground
// truth. For the quick mlp and gpt (and, with --paper, the literature's MLP:
// d=1024, 24 blocks, input (8,512,1024), fp32) it runs full-save and every
// policy, predicts each from the full-save run alone, and prints predicted
// against measured: the peak, the forward/backward/optimizer peaks, the
// forward+backward increase, recompute time and the frontier.
//
//   memscope-bench-whatif [--paper | --small] [--steps N] [--dir DIR] [--cost-only]
// --small (the CI smoke test): mlp only, 2 steps, the default sweep, and the
// cost on a run of 10 steps (about 200,000 events) instead of 200.
// Exits 1 when a run fails, 2 on a bad argument.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../common/bench_args.h"
#include "config.h"
#include "memscope/base/huge_page_malloc.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"
#include "memscope/whatif/whatif.h"
#include "whatif_truth.h"

using namespace memscope;

namespace {

// A full-save run of `layers` layers and `steps` steps, each layer's forward
// making `per_layer` allocations (half saved for backward, half temporaries),
// for the cost of predicting from a large trace: about
// steps x layers x per_layer x 2 events.
Trace largeRun(int steps, int layers, int per_layer) {
    Trace t;
    t.metadata.name = "large-full";
    ModuleInterner modules(t);
    std::vector<ModuleId> ids;
    for (int k = 0; k < layers; ++k) ids.push_back(modules.intern("Net", "h." + std::to_string(k)));
    t.modules.source = ModuleSource::Recorded;
    uint64_t next = 0x1000;
    int64_t now = 1'000'000;
    auto event = [&](EventKind kind, uint64_t address, uint64_t size, Category c) {
        Event e;
        e.time = now++;
        e.kind = kind;
        e.address = address;
        e.size = size;
        e.category = c;
        t.events.push_back(e);
    };
    auto phase = [&](PhaseKind kind, int64_t start, int step) {
        Phase p;
        p.kind = kind;
        p.name = t.internString(std::string(toString(kind)));
        p.start = start;
        p.step = step;
        t.phases.push_back(p);
        return t.phases.size() - 1;
    };
    t.events.reserve(size_t(steps) * size_t(layers) * size_t(per_layer) * 2 + 64);
    for (int s = 0; s < steps; ++s) {
        const size_t step = phase(PhaseKind::Step, now, s);
        const size_t fwd = phase(PhaseKind::Forward, now, s);
        std::vector<std::vector<uint64_t>> saved(static_cast<size_t>(layers));
        for (int k = 0; k < layers; ++k) {
            const int64_t start = now;
            for (int i = 0; i < per_layer / 2; ++i) {
                saved[size_t(k)].push_back(next);
                event(EventKind::Alloc, next, 4096 + uint64_t(i % 7) * 512, Category::Activation);
                next += 8192;
                event(EventKind::Alloc, next, 2048, Category::Temporary);
                event(EventKind::FreeCompleted, next, 2048, Category::Temporary);
                next += 8192;
            }
            t.modules.scopes.push_back({start, now, ids[size_t(k)], ModuleScopeKind::Forward});
        }
        t.phases[fwd].end = now;
        const size_t bwd = phase(PhaseKind::Backward, now, s);
        for (int k = layers - 1; k >= 0; --k)
            for (uint64_t a : saved[size_t(k)])
                event(EventKind::FreeCompleted, a, 0, Category::Activation);
        t.phases[bwd].end = now;
        t.phases[step].end = now + 1;
        ++now;
    }
    for (Phase& p : t.phases)
        if (p.kind != PhaseKind::Step) p.parent = PhaseId();
    return t;
}

// Opening a large layered run against predicting every default policy from it.
void cost(const std::string& dir, int steps = 200) {
    const std::string path = dir + "/large-full.memscope";
    std::filesystem::create_directories(dir);
    if (!writeNativeTrace(largeRun(steps, 24, 400), path)) return;
    const auto t0 = std::chrono::steady_clock::now();
    auto trace = importNativeTrace(path);
    if (!trace) return;
    auto opened = openTrace(std::move(*trace), path);
    if (!opened) return;
    const auto t1 = std::chrono::steady_clock::now();
    auto report = whatIf(*opened->trace, *opened->timeline, path, {});
    const auto t2 = std::chrono::steady_clock::now();
    if (!report) return;
    size_t predicted = 0;
    for (const WhatIfRow& r : report->rows) predicted += !r.measured && !r.refused;
    const double load = std::chrono::duration<double>(t1 - t0).count();
    const double predict = std::chrono::duration<double>(t2 - t1).count();
    std::printf(
        "cost: %zu events, %ju MB file: open %.2f s, predict %zu policies %.2f s (%.2f x the "
        "open)\n",
        opened->trace->events.size(), uintmax_t(std::filesystem::file_size(path) >> 20), load,
        predicted, predict, predict / load);
    std::filesystem::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
    // As the front ends run (huge_page_malloc.h), so that the figures are theirs.
    memscope::useHugePageMalloc(argv);
    bool paper = false;
    int steps = 4;
    std::string dir = (std::filesystem::temp_directory_path() / "memscope-bench-whatif").string();
    bool small = false, cost_only = false;
    static const char kUsage[] =
        "usage: memscope-bench-whatif [--paper | --small] [--steps N] [--dir DIR] [--cost-only]";
    static const char kHelp[] =
        "The what-if simulator against the trainer's measured runs: quick mlp and gpt, every\n"
        "layer-set policy and opt-in-bwd, alone and composed, predicted from the full-save run\n"
        "and measured; last, the cost of predicting from a large layered run (about 4 million\n"
        "events) against opening it.\n"
        "  --paper       also the literature's MLP (full and block, 2 steps)\n"
        "  --small       mlp only, 2 steps, the cost on about 200,000 events (a smoke run)\n"
        "  --steps N     training steps per run, 2..100 (default 4)\n"
        "  --dir DIR     work folder (default $TMPDIR/memscope-bench-whatif)\n"
        "  --cost-only   only the cost of predicting\n";
    bench::Args args(argc, argv, kUsage, kHelp);
    while (args.more()) {
        if (args.flag("--paper")) {
            paper = true;
            continue;
        }
        if (args.flag("--small")) {
            small = true;
            continue;
        }
        if (args.flag("--cost-only")) {
            cost_only = true;
            continue;
        }
        if (args.option("--steps", steps, 2, 100)) continue;
        if (args.option("--dir", dir)) continue;
        args.unknown();
    }
    if (small) steps = 2;
    const int cost_steps = small ? 10 : 200;
    if (cost_only) {
        cost(dir + "/cost", cost_steps);
        return 0;
    }
    int failures = 0;
    for (trainer::ModelKind kind : {trainer::ModelKind::Mlp, trainer::ModelKind::Gpt}) {
        if (small && kind == trainer::ModelKind::Gpt) continue;
        trainer::TrainConfig config;
        config.steps = steps;
        config.threads = 1;
        config.model = *trainer::preset(kind, "quick");
        // The test's sweep, and more compositions with opt-in-bwd.
        std::vector<std::string> list = whatif_truth::sweepPolicies(kind);
        if (!small)
            for (const char* p : {"segments:2+opt-in-bwd", "selective+opt-in-bwd"})
                list.push_back(p);
        if (kind == trainer::ModelKind::Gpt)
            for (const char* p : {"save:attention+opt-in-bwd", "save:matmul,attention+opt-in-bwd"})
                list.push_back(p);
        auto table = whatif_truth::run(config, "quick", list,
                                       dir + (kind == trainer::ModelKind::Gpt ? "/gpt" : "/mlp"));
        if (!table) {
            std::fprintf(stderr, "memscope-bench-whatif: %s\n", table.message().c_str());
            ++failures;
            continue;
        }
        std::fputs(whatif_truth::format(*table).c_str(), stdout);
        std::fputs("\n", stdout);
    }
    if (paper) {
        trainer::TrainConfig config;
        config.steps = 2;
        config.model = *trainer::preset(trainer::ModelKind::Mlp, "paper");
        auto table = whatif_truth::run(config, "paper", {"block"}, dir + "/paper");
        if (!table) {
            std::fprintf(stderr, "memscope-bench-whatif: %s\n", table.message().c_str());
            ++failures;
        } else {
            std::fputs(whatif_truth::format(*table).c_str(), stdout);
            const auto& r = table->rows.front();
            std::printf(
                "  paper MLP, block: forward+backward increase predicted %.0f MiB, measured "
                "%.0f MiB (%+.1f%%)\n",
                double(r.predicted_increase) / 1048576.0, double(r.measured_increase) / 1048576.0,
                r.increaseError() * 100);
        }
    }
    cost(dir + "/cost", cost_steps);
    return failures ? 1 : 0;
}
