// memscope-bench-trainer [--paper | --small] [--theory-only | --sweep-only |
//                         --overhead-only | --blas-only] [--rounds N]
// The CI smoke test runs --small --theory-only (seconds). No timing targets:
// it prints the figures (recording overhead: the hook's cost per event).
//
// 1. Theory: every policy of the sweep on the theory configurations: the run
//    table, the per-phase peaks, the memory/time frontier, and the activation
//    bytes per layer against the literature's formulas (core's
//    activation_theory.h, the numbers the tests check): Korthikanti et al.'s
//    s·b·h·(34 + 5as/h), 34sbh and 2sbh for gpt (bf16 directly, fp32 with
//    every non-mask term doubled), Chen et al.'s segments of ceil(sqrt(L)).
// 2. Sweep: the same tables for the trainer's presets (quick by default,
//    --paper: the literature's sizes, which take minutes per run with
//    OpenBLAS), and for mlp the forward+backward peak increase of full and
//    block, which the literature reports.
// 3. Recording overhead: capture on against off in paired runs, beside the
//    noise floor (off against off), with the hook's cost per event, its hot
//    path's alone and the reading side's.
// 4. BLAS: the step time of one configuration with the reference BLAS
//    against OpenBLAS (this binary re-run with the reference one first on
//    the library path).
//
// The theory configurations ("scaled") keep what the figures depend on and
// shrink the rest: for mlp the depth (24 blocks) and the tokens-to-width
// ratio N/d = 4 (so activations against parameters stay as in the paper),
// for gpt the depth (12 layers) and a·s/h = 16 (so the 5as/h term weighs as
// in GPT-2 small).

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../common/bench_args.h"
#include "analysis.h"
#include "config.h"
#include "report.h"
#include "trainer.h"

using namespace memscope;
using namespace memscope::trainer;
namespace fs = std::filesystem;

namespace {

struct Scale {
    ModelConfig mlp;
    ModelConfig gpt;
    int steps;
};

Scale scaled() {
    Scale s;
    s.mlp.kind = ModelKind::Mlp;
    s.mlp.layers = 24, s.mlp.hidden = 128, s.mlp.seq = 128, s.mlp.batch = 4;  // N = 512 = 4d
    s.gpt.kind = ModelKind::Gpt;
    s.gpt.layers = 12, s.gpt.hidden = 64, s.gpt.heads = 4, s.gpt.seq = 256, s.gpt.batch = 1;
    s.gpt.vocab = 1024, s.gpt.dropout = 0.1;  // a·s/h = 16, as in GPT-2 small
    s.steps = 2;
    return s;
}

Scale small() {  // a smoke run of the bench itself
    Scale s = scaled();
    s.mlp.layers = 6, s.mlp.hidden = 64, s.mlp.seq = 64;
    s.gpt.layers = 3, s.gpt.seq = 64, s.gpt.heads = 1;  // a·s/h = 1
    return s;
}

double mib(int64_t b) {
    return static_cast<double>(b) / (1024.0 * 1024.0);
}

std::string scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / "memscope-trainer-bench";
    fs::create_directories(dir);
    return (dir / (name + ".memscope")).string();
}

// Runs `policies` on `m` and prints the trainer's own tables (runs, phases,
// frontier, activations per layer against the formulas).
std::vector<PolicyReport> runTable(const ModelConfig& m, int steps,
                                   const std::vector<Policy>& policies, const char* preset) {
    TrainConfig c;
    c.model = m;
    c.steps = steps;
    std::vector<PolicyReport> reports;
    std::printf("\n");
    std::fflush(stdout);
    for (const Policy& p : policies) {
        RunOptions o;
        o.trace_path = scratch(std::string(modelName(m.kind)) + "-" + policyFileStem(p));
        o.preset = preset;
        auto run = runPolicy(c, p, o);
        if (!run) {
            std::printf("  %s failed: %s\n", policyName(p).c_str(), run.message().c_str());
            continue;
        }
        auto report = makeReport(std::move(run.value()));
        fs::remove(o.trace_path);
        if (!report) {
            std::printf("  %s: cannot read its trace: %s\n", policyName(p).c_str(),
                        report.message().c_str());
            continue;
        }
        reports.push_back(std::move(report.value()));
    }
    compareToFull(reports);
    markFrontier(reports);
    std::ostringstream table;
    printTable(table, c, preset, reports);
    std::fputs(table.str().c_str(), stdout);
    return reports;
}

// The literature reports mlp's activation memory as the forward+backward
// peak's increase over what is live when forward starts (parameters,
// optimizer state): the larger of the two phases' peaks, minus forward's start.
void printIncrease(const std::vector<PolicyReport>& reports) {
    for (const PolicyReport& r : reports) {
        if (r.run.policy != Policy{} && r.run.policy != Policy{Recompute::Block}) continue;
        const auto& fwd = r.phase_peaks[static_cast<size_t>(index(TrainingPhase::Forward))];
        const auto& bwd = r.phase_peaks[static_cast<size_t>(index(TrainingPhase::Backward))];
        if (!fwd || !bwd) continue;
        const int64_t base = fwd->bytes - fwd->increaseBytes();
        const int64_t increase = std::max(fwd->bytes, bwd->bytes) - base;
        std::printf("  %-6s forward+backward peak increase: %.1f MiB (%.2f GiB)\n",
                    policyName(r.run.policy).c_str(), mib(increase), mib(increase) / 1024.0);
    }
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double processCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The machine is shared and a step is a few milliseconds, so a single pair of
// runs says little. Each round runs the same configuration twice, back to back
// (which goes first alternates), and compares the two runs' median step times:
// pairing cancels slow drift in the machine's load. The figure is the median
// over rounds of those ratios, with the middle half of them beside it. The
// same done with recording off in both runs of a round is the noise floor.
int g_overhead_rounds = 21;  // --rounds: more narrows the median on a noisy machine
constexpr int kOverheadSteps = 25;

struct Paired {
    std::vector<double> ratios;  // second configuration's median step / first's, per round
    std::vector<double> thread_cpu_ratios;  // the same of the training thread's CPU time
    std::vector<double> first_ms;           // the first configuration's median step, per round
    double cpu_first = 1e300, cpu_second = 1e300;  // least process CPU of a whole run
    uint64_t events = 0;                           // recorded per run
    std::string recorder_cpus;                     // where the recording's threads ran
};

double quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

Result<Paired> pairedRuns(const TrainConfig& c, bool record_first, bool record_second) {
    Paired out;
    for (int round = 0; round < g_overhead_rounds; ++round) {
        double step_ms[2] = {0, 0}, thread_cpu_ms[2] = {0, 0};
        // Alternate which goes first, so that neither always inherits the
        // other's heap and caches.
        for (int k = 0; k < 2; ++k) {
            const int which = round % 2 == 0 ? k : 1 - k;
            RunOptions o;
            if (which == 0 ? record_first : record_second) o.trace_path = scratch("overhead");
            const double c0 = processCpuSeconds();
            auto run = runPolicy(c, Policy{}, o);
            const double cpu = processCpuSeconds() - c0;
            if (!run) return makeError(run.message());
            // The first two steps pay for first touches and Adam's state.
            std::vector<double> ms, cpu_ms;
            for (size_t s = 2; s < run->step_ns.size(); ++s) {
                ms.push_back(static_cast<double>(run->step_ns[s]) / 1e6);
                cpu_ms.push_back(static_cast<double>(run->step_thread_cpu_ns[s]) / 1e6);
            }
            step_ms[which] = median(ms);
            thread_cpu_ms[which] = median(cpu_ms);
            double& best = which == 0 ? out.cpu_first : out.cpu_second;
            best = std::min(best, cpu);
            if (!o.trace_path.empty()) {
                out.events = run->counts.allocs + run->counts.frees;
                out.recorder_cpus =
                    run->recorder_cpus.empty()
                        ? "wherever the scheduler put them"
                        : "on CPU " + run->recorder_cpus.toString() + ", off the training thread's";
            }
        }
        out.first_ms.push_back(step_ms[0]);
        out.ratios.push_back(step_ms[1] / step_ms[0]);
        out.thread_cpu_ratios.push_back(thread_cpu_ms[1] / thread_cpu_ms[0]);
    }
    return out;
}

void overhead(const ModelConfig& m, const char* label) {
    TrainConfig c;
    c.model = m;
    c.steps = kOverheadSteps;
    auto on = pairedRuns(c, false, true);
    auto floor = pairedRuns(c, false, false);
    if (!on || !floor) {
        std::printf("overhead run failed: %s\n", (on ? floor : on).message().c_str());
        return;
    }
    const auto pct = [](double ratio) { return 100.0 * (ratio - 1.0); };
    const double per_step = static_cast<double>(on->events) / c.steps;
    const double off_ms = median(on->first_ms);
    const double overhead = pct(median(on->ratios));
    std::printf("  %s (%.0f events per step, %.3f ms per step without recording)\n", label,
                per_step, off_ms);
    std::printf(
        "    step time, recording on against off: %+6.2f%%  (middle half of %d rounds "
        "%+.2f%% to %+.2f%%; %+.0f ns per event)\n",
        overhead, g_overhead_rounds, pct(quantile(on->ratios, 0.25)),
        pct(quantile(on->ratios, 0.75)), overhead / 100.0 * off_ms * 1e6 / per_step);
    std::printf(
        "    noise floor, off against off:        %+6.2f%%  (middle half %+.2f%% to %+.2f%%)\n",
        pct(median(floor->ratios)), pct(quantile(floor->ratios, 0.25)),
        pct(quantile(floor->ratios, 0.75)));
    // The recording's threads (the ledger's reader, the trace writer) run on
    // the other core: this is what the training thread itself pays.
    std::printf(
        "    training thread's CPU time per step:  %+6.2f%%  (middle half %+.2f%% to %+.2f%%; "
        "off against off %+.2f%%)\n",
        pct(median(on->thread_cpu_ratios)), pct(quantile(on->thread_cpu_ratios, 0.25)),
        pct(quantile(on->thread_cpu_ratios, 0.75)), pct(median(floor->thread_cpu_ratios)));
    std::printf(
        "    process CPU, best whole run (setup, writer and file included): off %7.3f s  "
        "on %7.3f s  overhead %+6.2f%%\n",
        on->cpu_first, on->cpu_second, 100.0 * (on->cpu_second - on->cpu_first) / on->cpu_first);
    std::printf("    the recording's threads ran %s\n", on->recorder_cpus.c_str());
}

// Which BLAS this process loaded, from its mappings: the libblas.so.3 found
// first (LAPACK may map OpenBLAS's own library beside the reference BLAS).
std::string loadedBlas() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    bool openblas = false;
    while (std::getline(maps, line)) {
        if (line.find("/blas/libblas.so") != std::string::npos) return "reference BLAS";
        openblas = openblas || line.find("openblas") != std::string::npos;
    }
    return openblas ? "OpenBLAS" : "unknown BLAS";
}

// The configuration both BLAS runs use: big enough that matrix products
// dominate, small enough for the reference BLAS (seconds per step).
ModelConfig blasConfig() {
    ModelConfig m;
    m.kind = ModelKind::Mlp;
    m.layers = 4, m.hidden = 256, m.seq = 256, m.batch = 4;
    return m;
}

// --step-time (internal): one uncaptured full run of blasConfig; prints the
// BLAS and the second step's time for the parent to read.
int stepTime() {
    TrainConfig c;
    c.model = blasConfig();
    c.steps = 2;
    auto run = runPolicy(c, Policy{}, RunOptions{});
    if (!run || run->step_ns.size() < 2) return 1;
    std::printf("%s\t%.1f\n", loadedBlas().c_str(), static_cast<double>(run->step_ns[1]) / 1e6);
    return 0;
}

void blasComparison(const char* self) {
    const char* reference_dir = "/usr/lib/x86_64-linux-gnu/blas";
    std::printf("\nBLAS: mlp %s, policy full, second step, no capture\n",
                describe(blasConfig()).c_str());
    for (bool reference : {false, true}) {
        if (reference && !fs::exists(fs::path(reference_dir) / "libblas.so.3")) {
            std::printf("  reference BLAS: not installed (%s/libblas.so.3)\n", reference_dir);
            continue;
        }
        std::string command;
        if (reference) command = std::string("LD_LIBRARY_PATH=") + reference_dir + " ";
        command += "'" + std::string(self) + "' --step-time";
        FILE* pipe = popen(command.c_str(), "r");
        char out[256] = {};
        const bool read = pipe && std::fgets(out, sizeof out, pipe) != nullptr;
        if (pipe) pclose(pipe);
        std::string text = read ? out : "";
        const size_t tab = text.find('\t');
        if (tab == std::string::npos) {
            std::printf("  %s: the run failed\n", reference ? "reference BLAS" : "default");
            continue;
        }
        std::printf("  %-16s %10.1f ms per step\n", text.substr(0, tab).c_str(),
                    std::strtod(text.c_str() + tab + 1, nullptr));
    }
}

}  // namespace

int main(int argc, char** argv) {
    Scale scale = scaled();
    bool theory = true, sweep = true, cost = true, blas = true, paper_presets = false;
    const char* scale_name = "scaled";
    auto only = [&](bool& keep) {
        theory = sweep = cost = blas = false;
        keep = true;
    };
    static const char kUsage[] =
        "usage: memscope-bench-trainer [--paper|--small] "
        "[--theory-only|--sweep-only|--overhead-only|--blas-only] [--rounds N]";
    static const char kHelp[] =
        "1. theory: every policy on the theory configurations, activation bytes per layer\n"
        "   against Korthikanti et al.'s formulas; 2. sweep: the same on the trainer's presets\n"
        "   (quick, --paper: the literature's sizes); 3. recording overhead: capture on against\n"
        "   off, the hook's cost per event; 4. BLAS: reference against OpenBLAS step time.\n"
        "  --small          small theory configurations (a smoke run)\n"
        "  --paper          the paper presets for the sweep\n"
        "  --theory-only, --sweep-only, --overhead-only, --blas-only   one part alone\n"
        "  --rounds N       recording-overhead rounds, 1..1000 (default 21)\n";
    bench::Args args(argc, argv, kUsage, kHelp);
    while (args.more()) {
        if (args.flag("--step-time")) return stepTime();  // the BLAS comparison's child
        if (args.flag("--paper")) {
            paper_presets = true;
            continue;
        }
        if (args.flag("--small")) {
            scale = small(), scale_name = "small (smoke)";
            continue;
        }
        if (args.flag("--theory-only")) {
            only(theory);
            continue;
        }
        if (args.flag("--sweep-only")) {
            only(sweep);
            continue;
        }
        if (args.flag("--overhead-only")) {
            only(cost);
            continue;
        }
        if (args.flag("--blas-only")) {
            only(blas);
            continue;
        }
        if (args.option("--rounds", g_overhead_rounds, 1, 1000)) continue;
        args.unknown();
    }
    std::printf("memscope-bench-trainer: LibTorch %s, %s, theory configurations: %s, presets: %s\n",
                torchVersion().c_str(), loadedBlas().c_str(), scale_name,
                paper_presets ? "paper" : "quick");
    if (theory && !paper_presets) {
        std::printf("\n== activations against the formulas (theory configurations) ==");
        runTable(scale.mlp, scale.steps, sweepPolicies(ModelKind::Mlp, scale.mlp.layers), "bench");
        ModelConfig g = scale.gpt;
        g.dtype = DType::BFloat16;
        runTable(g, scale.steps, parsePolicies("full,selective,block,sqrt").value(), "bench");
        g.dtype = DType::Float32;
        runTable(g, scale.steps, sweepPolicies(ModelKind::Gpt, g.layers), "bench");
    }
    if (sweep) {
        const char* preset_name = paper_presets ? "paper" : "quick";
        std::printf("\n== the sweep on the %s presets ==", preset_name);
        for (ModelKind kind : {ModelKind::Mlp, ModelKind::Gpt}) {
            const ModelConfig m = preset(kind, preset_name).value();
            const auto reports =
                runTable(m, paper_presets ? 2 : 3, sweepPolicies(kind, m.layers), preset_name);
            if (kind == ModelKind::Mlp) printIncrease(reports);
        }
    }
    if (cost) {
        const int pairs = 200000;
        auto hook = measureHookCost(pairs, scratch("hook-cost"));
        if (hook) {
            std::printf(
                "\nmemory hook, per event (256-byte tensors allocated and freed %d times, "
                "best of 5):\n"
                "  through c10 (%s): off %7.1f ns  on %7.1f ns  recording adds %6.1f ns "
                "per event (%llu events per round)\n"
                "  the hot path alone (%s + lock-free log append): %6.1f ns per event\n"
                "  reading the log (the ledger thread's work): %6.1f ns per event\n",
                pairs, hook->wraps_cpu_allocator ? "CPU allocator wrapper" : "c10 memory reports",
                hook->off_ns, hook->on_ns, hook->on_ns - hook->off_ns,
                static_cast<unsigned long long>(hook->events),
                hook->clock_counts_cycles ? "time-stamp counter" : "steady clock",
                hook->hot_path_ns, hook->read_ns);
        } else {
            std::printf("\nmemory hook cost: %s\n", hook.message().c_str());
        }
        std::printf(
            "\nrecording overhead (policy full, %d rounds of two interleaved runs of %d "
            "steps, the first two steps left out):\n",
            g_overhead_rounds, kOverheadSteps);
        ModelConfig q = preset(ModelKind::Mlp, "quick").value();
        overhead(q, ("mlp quick " + describe(q)).c_str());
        ModelConfig g = preset(ModelKind::Gpt, "quick").value();
        overhead(g, ("gpt quick " + describe(g)).c_str());
    }
    if (blas) blasComparison(argv[0]);
    return 0;
}
