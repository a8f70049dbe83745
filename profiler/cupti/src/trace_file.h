#pragma once
// One trace file per traced process: its name (pid, and RANK / LOCAL_RANK when
// a launcher such as torchrun sets them) and its header (clocks, run facts).

#include <cstdint>
#include <optional>
#include <string>

#include "memscope/model/trace.h"
#include "options.h"

namespace memscope::cupti {

struct ProcessIdentity {
    int64_t pid = 0;
    std::optional<int32_t> rank;        // $RANK
    std::optional<int32_t> local_rank;  // $LOCAL_RANK
};

ProcessIdentity currentProcess();

// "memscope-<pid>[-rank<R>][-local<L>].memscope"
std::string traceFileName(const ProcessIdentity& process);

// The header: clocks sampled together (so that CUPTI time can be mapped to
// wall time), options, host and command line ("command", readable, and
// "argv", a JSON list of strings); the trace is named after the program and
// its rank (run_name.h: "my_cuda_app rank 0", "train.py rank 1").
TraceMetadata traceMetadata(const ProcessIdentity& process, const TracerOptions& options);

}  // namespace memscope::cupti
