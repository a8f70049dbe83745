#pragma once
// The Python hook's append-only log, `.memscope-hook/<pid>/log.jsonl` (hook
// file version 2): one JSON object per line, written as phases close, so a
// process killed at any moment leaves every line it wrote (at most the last
// one cut short). Schema: docs/HOOK_FORMAT.md.
//
// The hook logs step records as steps end, and a later record for step s
// replaces those with number >= s (a second optimizer joined the step, or
// steps split by forwards turned out to be one optimizer step's
// accumulation). resolveHookPhases turns the records into the steps users
// count; see there.

#include <cstdint>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/recording/capture_log.h"
#include "memscope/recording/hook_sidecar.h"

namespace memscope {

struct HookLogRecordPhase {
    uint64_t seq = 0;  // the hook's order of records; 0 for hook.json's open phases
    HookPhase phase;
};

struct HookCaptureSwitch {
    int64_t time_ns = 0;
    bool on = false;
};

struct HookNvtxRange {
    std::string name;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
};

struct HookOom {
    int64_t time_ns = 0;
    int32_t device = -1;
    int64_t bytes = 0;
};

struct HookLog {
    std::vector<HookLogRecordPhase> phases;  // by seq, duplicates removed
    std::vector<HookCaptureSwitch> capture;
    std::vector<HookNvtxRange> nvtx_ranges;
    std::vector<HookOom> ooms;
    // Module scopes: {"t": "module", "id", "root", "path", "class"} once per
    // module, then batches {"t": "module_scopes", "base_ns": B, "s": [start -
    // B, end - start, id, kind, ...]}. Modules by id (the first record of an
    // id wins); batches written twice (same seq) count once.
    std::vector<HookModule> modules;
    std::vector<HookModuleScope> module_scopes;
    size_t bad_module_scopes = 0;  // entries of a batch that make no scope: left out
    // Tensor roles: {"t": "tensor_roles", "role", "time_ns", "s": [device,
    // address, bytes, ...]}; batches written twice (same seq) count once. A
    // role this reader does not know (a newer hook's) is skipped silently.
    std::vector<HookTensorRole> tensor_roles;
    size_t bad_tensor_roles = 0;  // entries of a batch that make no label: left out
    // Op scopes (MEMSCOPE_OPS=dispatch): {"t": "op", "id", "name"} once per
    // op name, then batches {"t": "op_scopes", "base_ns": B, "s": [start - B,
    // end - start, id, depth, ...]}; batches written twice (same seq) count
    // once. ops.bad counts entries that make no scope.
    CapturedOps ops;
    size_t damaged_lines = 0;  // not JSON or not a known record: left out
    bool cut_short = false;    // the last line has no newline (killed mid-write)
};

// Bounds of the log a reader accepts: a line longer is damage (left out, not
// kept); a log larger is refused, not read.
inline constexpr size_t kMaxHookLogLine = size_t(64) << 20;
inline constexpr uint64_t kMaxHookLogBytes = uint64_t(8) << 30;

// A missing file is an empty log (the process closed no phase). Read a line
// at a time, through the guarded open (file_io.h).
Result<HookLog> readHookLog(const std::string& path);
HookLog parseHookLog(std::string_view text);

// The phases as users count steps, from the log's records and the phases
// hook.json says were open at exit:
//   - step records resolved (a record for step s replaces those >= s);
//   - what follows the last step: with a backward or an optimizer step in it
//     (the process was killed mid-step) it is one more step; made only of
//     zero_grad it belongs to the last step, which is extended over it (a
//     zero_grad at the end of the loop); forwards without a backward (an
//     evaluation after training) stay outside every step. A process that
//     never trained gets one step over its forwards;
//   - inner phases take the number of the step that holds them (-1: none).
// Sorted by start, a step before the phases it holds.
std::vector<HookPhase> resolveHookPhases(const std::vector<HookLogRecordPhase>& records,
                                         const std::vector<HookPhase>& open_at_exit);

}  // namespace memscope
