#pragma once
// One training run under one policy, optionally recorded as a native trace.
// Torch-free interface: main.cpp, the tests and the benchmark link
// memscope_trainer_lib without compiling LibTorch headers themselves.

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"
#include "ledger.h"
#include "memscope/base/result.h"

namespace memscope::trainer {

struct RunOptions {
    std::string trace_path;  // empty: do not record (the overhead baseline)
    std::string preset;      // stored in the trace metadata only
    bool keep_parameters = false;
    std::string cuda_snapshot_path;  // CUDA builds on a CUDA device: also dump a snapshot
};

struct RunResult {
    Policy policy;
    std::string trace_path;
    std::vector<double> losses;         // per step
    std::vector<int64_t> step_ns;       // per step, recording included
    std::vector<int64_t> recompute_ns;  // per step: time inside Recompute phases
    // Per step, the CPU time of the training thread alone: what recording
    // costs that thread, without the machine's noise in wall time.
    std::vector<int64_t> step_thread_cpu_ns;
    std::vector<float> parameters;  // all parameters, flattened (keep_parameters)
    AllocationLedger::Counts counts;
    std::string cuda_snapshot;  // path written, or why none was
    // The CPUs the recording's threads (the ledger's, the writer's) were kept
    // on: all the training thread may use but its own. Empty when it may use
    // only one, or nothing was recorded (see memscope/cpu_set.h).
    CpuSet recorder_cpus;
};

bool cudaAvailable();
std::string torchVersion();

// The memory hook's own cost per recorded event: tensors of 256 bytes are
// allocated and freed `pairs` times with the hook off and on (recording into
// `scratch_trace`); the best of five rounds of each, in ns per event (an
// allocation or a free). `on - off` is what recording adds to each event.
struct HookCost {
    double off_ns = 0;
    double on_ns = 0;
    uint64_t events = 0;  // recorded per round
    // The hot path alone, called directly (clock read + ledger append), and
    // what reading the log costs per event (matching frees to allocations,
    // categories, handing the step to the writer), off the training thread.
    double hot_path_ns = 0;
    double read_ns = 0;
    bool wraps_cpu_allocator = false;  // the capture's mechanism (capture.h)
    bool clock_counts_cycles = false;  // the hook's clock is the TSC (clock.h)
};
Result<HookCost> measureHookCost(int pairs, const std::string& scratch_trace);

Result<RunResult> runPolicy(const TrainConfig& config, const Policy& policy,
                            const RunOptions& options);

}  // namespace memscope::trainer
