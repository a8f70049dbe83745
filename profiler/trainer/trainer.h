#pragma once
// One training run under one policy, optionally recorded as a native trace.
// Torch-free interface: main.cpp, the tests and the benchmark link
// memscope_trainer_lib without compiling LibTorch headers themselves.

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"
#include "ledger.h"
#include "memscope/result.h"

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
    std::vector<float> parameters;      // all parameters, flattened (keep_parameters)
    AllocationLedger::Counts counts;
    std::string cuda_snapshot;  // path written, or why none was
};

bool cudaAvailable();
std::string torchVersion();

Result<RunResult> runPolicy(const TrainConfig& config, const Policy& policy,
                            const RunOptions& options);

}  // namespace memscope::trainer
