#pragma once
// The environment `memscope-cli record` sets for the traced process and the
// injection library reads: written down once here so both sides agree.
// Header-only on purpose: the CLI builds even where the library is skipped.

#include <array>

namespace memscope::cupti::env {

inline constexpr const char* kCudaInjection = "CUDA_INJECTION64_PATH";
inline constexpr const char* kNvtxInjection = "NVTX_INJECTION64_PATH";
inline constexpr const char* kOutputDir = "MEMSCOPE_OUTPUT_DIR";  // default: cwd
inline constexpr const char* kTensorLevel =
    "MEMSCOPE_TENSOR_LEVEL";                               // "1": allocations are tensors
inline constexpr const char* kStacks = "MEMSCOPE_STACKS";  // "1": host stack per allocation
inline constexpr const char* kVmmCallbacks =
    "MEMSCOPE_VMM_CALLBACKS";  // "1": cuMemCreate/Map/...; "0": not even for expandable segments
inline constexpr const char* kLibraryOverride = "MEMSCOPE_CUPTI_LIBRARY";  // CLI: library path
inline constexpr const char* kNoCaching = "PYTORCH_NO_CUDA_MEMORY_CACHING";

// The Python startup hook (profiler/pyhook): its folder goes first on
// PYTHONPATH; it records phases and the allocator history when MEMSCOPE_HOOK=1.
inline constexpr const char* kHook = "MEMSCOPE_HOOK";
inline constexpr const char* kPythonPath = "PYTHONPATH";
inline constexpr const char* kPyhookOverride = "MEMSCOPE_PYHOOK_DIR";  // CLI: hook folder
inline constexpr const char* kCaptureLibrary =
    "MEMSCOPE_TORCH_CAPTURE_LIBRARY";  // CPU allocations (c10 reporting hook)
inline constexpr const char* kHistoryEntries =
    "MEMSCOPE_HISTORY_MAX_ENTRIES";  // allocator history ring size
// What to record (memscope-cli record --steps / --capture-range / --history-ring):
//   MEMSCOPE_STEPS="A:B": the allocator history is on from the start of step A
//   to the end of step B (steps counted as the hook counts them, from 0);
//   MEMSCOPE_CAPTURE_RANGE="nvtx:NAME": on inside each NVTX range NAME;
//   MEMSCOPE_HISTORY_RING="1": keep only the last MAX_ENTRIES entries (no dump
//   before the ring wraps; dumped at exit, on a signal and on OOM).
inline constexpr const char* kSteps = "MEMSCOPE_STEPS";
inline constexpr const char* kCaptureRange = "MEMSCOPE_CAPTURE_RANGE";
inline constexpr const char* kHistoryRing = "MEMSCOPE_HISTORY_RING";
// Module scopes (memscope-cli record --module-depth N / --module-backward):
//   MEMSCOPE_MODULE_DEPTH="N": module call levels recorded, the outermost
//   module being level 1; 0 records none (the hook's default: 6, below);
//   MEMSCOPE_MODULE_BACKWARD="1": backward scopes too, through PyTorch's
//   global full backward hooks (2.0+; they make in-place ops on module
//   outputs fail, hence off by default).
inline constexpr const char* kModuleDepth = "MEMSCOPE_MODULE_DEPTH";
inline constexpr const char* kModuleBackward = "MEMSCOPE_MODULE_BACKWARD";
inline constexpr int kDefaultModuleDepth = 6;  // config.py's DEFAULT_MODULE_DEPTH
// Tensor roles (memscope-cli record --no-tensor-roles): "0" stops the hook
// logging what the tensors it sees are (parameters, gradients, optimizer
// state, inputs), so that every category is inferred again. On by default.
inline constexpr const char* kTensorRoles = "MEMSCOPE_TENSOR_ROLES";
// Which op made each allocation (memscope-cli record --ops): "auto" (the
// default) records them through at::RecordFunction in the capture library
// where it loads into the job's PyTorch, else not; "dispatch" through a
// TorchDispatchMode the hook keeps pushed (any PyTorch, slower); "frames"
// has the CUDA allocator history record C++ frames (stacks="all", PyTorch
// 2.1+), from which each allocation's op is inferred when the trace is
// opened; "off" none.
inline constexpr const char* kOps = "MEMSCOPE_OPS";
// Attachable and idle (memscope-cli record --idle): "1" loads the hook but
// records nothing (no allocator history, module scopes, tensor roles or CPU
// log) until `memscope-cli attach` opens a window over the process's control
// socket; phases are still counted, so that windows use the job's steps.
inline constexpr const char* kIdle = "MEMSCOPE_IDLE";
// A checkpointing policy applied to the job (memscope-cli record --apply
// POLICY): the absolute path of the apply plan record wrote
// (core/whatif's apply_plan.h; the hook's apply.py).
inline constexpr const char* kApply = "MEMSCOPE_APPLY";
// The memscope-cli that started the job: memscope.stop() (the hook's
// in-process API) merges its window with it (`record --merge`).
inline constexpr const char* kCli = "MEMSCOPE_CLI";
// The write end of a pipe `record` keeps open: the hook makes it Python's
// signal wakeup fd, so each signal the process receives writes its number
// there at once. `record` forwards a signal only when no such byte arrives
// (the child did not get it itself, e.g. from the terminal or a group kill).
inline constexpr const char* kSignalAckFd = "MEMSCOPE_SIGNAL_ACK_FD";
// PyTorch's allocator configuration (and its newer name): with
// expandable_segments:True the tracer turns the VMM callbacks on unless
// MEMSCOPE_VMM_CALLBACKS is set explicitly.
inline constexpr const char* kAllocConf = "PYTORCH_CUDA_ALLOC_CONF";
inline constexpr const char* kAllocConfNew = "PYTORCH_ALLOC_CONF";

// The variables the Python hook reads (profiler/pyhook: config.py, and
// MEMSCOPE_HOOK in sitecustomize.py), every one of them: the others above are
// the injection library's or the CLI's own. A ctest (tests/contracts) holds
// this list and the hook's Python to the same set, and kDefaultModuleDepth to
// config.py's DEFAULT_MODULE_DEPTH.
inline constexpr std::array kHookVariables{
    kHook,         kOutputDir,   kCaptureLibrary, kHistoryEntries, kHistoryRing, kSteps,
    kCaptureRange, kModuleDepth, kModuleBackward, kSignalAckFd,    kTensorRoles, kIdle,
    kCli,          kOps,         kApply,
};

// File names: memscope-<pid>[-rank<R>][-local<L>].memscope
inline constexpr const char* kFilePrefix = "memscope-";
inline constexpr const char* kFileSuffix = ".memscope";

}  // namespace memscope::cupti::env
