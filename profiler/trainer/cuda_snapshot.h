#pragma once
// The CUDA caching allocator's own history, dumped as a real PyTorch snapshot
// through LibTorch's C++ API. Compiled in only against a CUDA LibTorch 2.x
// (MEMSCOPE_TRAINER_CUDA_SNAPSHOT); elsewhere these say why not.

#include <string>

#include "memscope/base/result.h"

namespace memscope::trainer {

Result<void> startCudaHistory();
Result<void> dumpCudaSnapshot(const std::string& path);

}  // namespace memscope::trainer
