#pragma once
// The one validation of the environment the Python hook reads, shared by
// `memscope-cli record` (its options and what it finds in the environment),
// the merge (what hook.json says was recorded) and the hook itself
// (profiler/pyhook/memscope_hook/config.py implements the same rules). Both
// are tested against one table of cases: tests/contracts/hook_env_cases.json.
//
// Numbers are ASCII decimal digits only (no sign, space, '_' or other
// scripts' digits, which Python's int() would take) and fit an int32.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "memscope/base/result.h"

namespace memscope {

inline constexpr int32_t kMaxHookModuleDepth = 256;

// MEMSCOPE_STEPS / --steps: "A:B" with 0 <= A <= B, or "A" (A:A).
Result<std::pair<int32_t, int32_t>> parseHookSteps(std::string_view text);
// MEMSCOPE_HISTORY_MAX_ENTRIES / --history-entries: 1 to INT32_MAX.
Result<int32_t> parseHookHistoryEntries(std::string_view text);
// MEMSCOPE_MODULE_DEPTH / --module-depth: 0 to kMaxHookModuleDepth.
Result<int32_t> parseHookModuleDepth(std::string_view text);
// MEMSCOPE_CAPTURE_RANGE / --capture-range: "nvtx:NAME", NAME not empty.
Result<std::string> parseHookCaptureRange(std::string_view text);
// MEMSCOPE_TENSOR_ROLES: "0" or "1".
Result<bool> parseHookTensorRoles(std::string_view text);

// How the ops that made the allocations are recorded (MEMSCOPE_OPS / --ops).
// Values are what the variable spells.
enum class HookOpsMode : uint8_t {
    Auto,      // at::RecordFunction in the capture library where it loads, else none
    Dispatch,  // the hook's TorchDispatchMode, at a measured cost
    Off,
    Frames,  // the CUDA history's C++ frames (stacks="all"): ops inferred when opened
};
std::string_view toString(HookOpsMode mode);  // "auto", "dispatch", "off", "frames"
// MEMSCOPE_OPS / --ops: "auto", "dispatch", "frames" or "off".
Result<HookOpsMode> parseHookOps(std::string_view text);

// MEMSCOPE_APPLY (record --apply): the apply plan's path (apply_plan.h),
// absolute (the job may change directory before it reads it), not "/" alone,
// at most kMaxHookApplyPathBytes.
inline constexpr size_t kMaxHookApplyPathBytes = 4096;
Result<std::string> parseHookApply(std::string_view text);

// Any of the variables above by name: its value in a canonical text ("3:4",
// "6", "nvtx:NAME", "1"), or the error "NAME=VALUE: what is wrong". A name
// not validated here is an error too. (What the table test compares.)
Result<std::string> checkHookVariable(std::string_view name, std::string_view value);

}  // namespace memscope
