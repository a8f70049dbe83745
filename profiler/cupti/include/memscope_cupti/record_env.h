#pragma once
// The environment `memscope-cli record` sets for the traced process and the
// injection library reads: written down once here so both sides agree.
// Header-only on purpose: the CLI builds even where the library is skipped.

namespace memscope::cupti::env {

inline constexpr const char* kCudaInjection = "CUDA_INJECTION64_PATH";
inline constexpr const char* kNvtxInjection = "NVTX_INJECTION64_PATH";
inline constexpr const char* kOutputDir = "MEMSCOPE_OUTPUT_DIR";  // default: cwd
inline constexpr const char* kTensorLevel =
    "MEMSCOPE_TENSOR_LEVEL";                               // "1": allocations are tensors
inline constexpr const char* kStacks = "MEMSCOPE_STACKS";  // "1": host stack per allocation
inline constexpr const char* kVmmCallbacks = "MEMSCOPE_VMM_CALLBACKS";  // "1": cuMemCreate/Map/...
inline constexpr const char* kLibraryOverride = "MEMSCOPE_CUPTI_LIBRARY";  // CLI: library path
inline constexpr const char* kNoCaching = "PYTORCH_NO_CUDA_MEMORY_CACHING";

// File names: memscope-<pid>[-rank<R>][-local<L>].memscope
inline constexpr const char* kFilePrefix = "memscope-";
inline constexpr const char* kFileSuffix = ".memscope";

}  // namespace memscope::cupti::env
