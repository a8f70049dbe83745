#include "stack_store.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace memscope::cupti {
namespace {

// Allocations whose record never comes (a failed call, the runtime and the
// driver both tagging one call) would otherwise pile up.
constexpr size_t kMaxPending = 16384;

// Frames of the tracer itself and of CUDA's own libraries say nothing about
// who allocated.
bool isNoise(std::string_view module) {
    return module.find("libmemscope_cupti") != std::string_view::npos ||
           module.find("libcupti") != std::string_view::npos ||
           module.find("libcuda.so") != std::string_view::npos;
}

std::string demangle(const char* symbol) {
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> out(
        abi::__cxa_demangle(symbol, nullptr, nullptr, &status), &std::free);
    return status == 0 && out ? std::string(out.get()) : std::string(symbol);
}

}  // namespace

void StackStore::warmUp() {
    void* frames[2];
    backtrace(frames, 2);
}

std::vector<void*> StackStore::captureHere() {
    void* frames[kMaxFrames];
    const int n = backtrace(frames, kMaxFrames);
    return std::vector<void*>(frames, frames + (n > 0 ? n : 0));
}

void StackStore::put(uint32_t correlation_id, const std::vector<void*>& frames) {
    std::lock_guard lock(mutex_);
    if (pending_.insert_or_assign(correlation_id, frames).second) order_.push_back(correlation_id);
    while (order_.size() > kMaxPending) {
        pending_.erase(order_.front());
        order_.pop_front();
    }
}

StackId StackStore::take(uint32_t correlation_id, BackgroundTraceWriter& writer) {
    std::vector<void*> raw;
    {
        std::lock_guard lock(mutex_);
        auto it = pending_.find(correlation_id);
        if (it == pending_.end()) return StackId{};
        raw = std::move(it->second);
        pending_.erase(it);
        // order_ keeps the stale id; erasing a missing key later is harmless.
    }
    std::lock_guard lock(symbol_mutex_);
    std::vector<FrameId> frames;
    frames.reserve(raw.size());
    for (void* address : raw) {
        const FrameId id = symbolize(address, writer);
        if (!id.isNull()) frames.push_back(id);
    }
    return writer.internStack(frames);
}

FrameId StackStore::symbolize(void* address, BackgroundTraceWriter& writer) {
    if (auto it = frames_.find(address); it != frames_.end()) return it->second;
    Dl_info info{};
    FrameId id;
    // Return addresses point after the call; -1 lands inside the calling line.
    void* lookup = static_cast<char*>(address) - 1;
    if (dladdr(lookup, &info) != 0 && info.dli_fname) {
        const std::string_view module = info.dli_fname;
        if (!isNoise(module)) {
            std::string function;
            if (info.dli_sname) {
                function = demangle(info.dli_sname);
            } else {
                char text[64];
                const auto offset = static_cast<char*>(lookup) - static_cast<char*>(info.dli_fbase);
                std::snprintf(text, sizeof(text), "+0x%lx", static_cast<unsigned long>(offset));
                function = text;
            }
            Frame frame;
            frame.function = writer.internString(function);
            frame.file = writer.internString(module);
            id = writer.internFrame(frame);
        }
    }
    frames_.emplace(address, id);
    return id;
}

size_t StackStore::pending() const {
    std::lock_guard lock(mutex_);
    return pending_.size();
}

}  // namespace memscope::cupti
