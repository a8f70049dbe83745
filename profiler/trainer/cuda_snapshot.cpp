#include "cuda_snapshot.h"

#if defined(MEMSCOPE_TRAINER_CUDA_SNAPSHOT)
#include <torch/csrc/cuda/memory_snapshot.h>

#include <cstdint>
#include <exception>
#include <fstream>
#include <string>
#endif

namespace memscope::trainer {

#if defined(MEMSCOPE_TRAINER_CUDA_SNAPSHOT)

namespace {

// The C++ snapshot API changed across 2.x: 2.1+ has the string-option overload
// (enabled, context, stacks, max_entries); 2.0 only (bool, max_entries). Pick
// whichever this LibTorch declares, at compile time.
template <typename... Args>
auto recordHistory(int, Args... args)
    -> decltype(torch::cuda::_record_memory_history(args...), void()) {
    torch::cuda::_record_memory_history(args...);
}
template <typename... Args>
void recordHistory(long, Args...) {
    torch::cuda::_record_memory_history(true, int64_t{1000000});
}

}  // namespace

Result<void> startCudaHistory() {
    try {
        // Every alloc/free with its context: the C++ equivalent of
        // torch.cuda.memory._record_memory_history().
        recordHistory(0, std::string("all"), std::string("all"), std::string("all"),
                      size_t{1000000});
    } catch (const std::exception& e) {
        return makeError(std::string("cannot record CUDA memory history: ") + e.what());
    }
    return {};
}

Result<void> dumpCudaSnapshot(const std::string& path) {
    try {
        // std::string in most 2.x releases, std::vector<char> in 2.0.
        const auto bytes = torch::cuda::_memory_snapshot_pickled();
        std::ofstream out(path, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!out) return makeError("cannot write " + path);
    } catch (const std::exception& e) {
        return makeError(std::string("cannot take a CUDA memory snapshot: ") + e.what());
    }
    return {};
}

#else

Result<void> startCudaHistory() {
    return makeError("this memscope-train was built against a LibTorch without CUDA");
}
Result<void> dumpCudaSnapshot(const std::string&) {
    return makeError("this memscope-train was built against a LibTorch without CUDA");
}

#endif

}  // namespace memscope::trainer
