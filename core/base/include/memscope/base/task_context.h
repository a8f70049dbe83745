#pragma once
// What a long task (an import, a timeline build) gets from its caller: progress
// in bytes, a cooperative cancel flag, and a place for warnings. Warnings are
// values that travel beside the result, never text hidden in the trace, so a
// converter cannot write them into its output by accident.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/base/result.h"

namespace memscope {

enum class WarningKind : uint8_t {
    DamagedTail = 0,     // a file cut short or corrupt after its good part
    DroppedRecords = 1,  // the recorder lost records (CUPTI buffers, a ring buffer)
    ClampedValues = 2,   // values out of range were clamped
    SkippedRecords = 3,  // records memscope could not use were left out
    Other = 4,
};

std::string_view toString(WarningKind kind);

struct LoadWarning {
    WarningKind kind = WarningKind::Other;
    std::string message;  // a sentence a user can act on
    uint64_t count = 0;   // records or bytes concerned, where known
    friend bool operator==(const LoadWarning&, const LoadWarning&) = default;
};

// Progress in bytes of input consumed, a cooperative cancel flag, and a sink
// for warnings. All may be left empty; implementations call progress at most
// every few MB.
struct TaskContext {
    std::function<void(uint64_t done, uint64_t total)> progress;
    const std::atomic<bool>* cancel = nullptr;
    std::vector<LoadWarning>* warnings = nullptr;

    bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
    void report(uint64_t done, uint64_t total) const {
        if (progress) progress(done, total);
    }
    void warn(LoadWarning warning) const {
        if (warnings) warnings->push_back(std::move(warning));
    }
};

inline Error cancelledError() {
    return makeError("cancelled");
}

}  // namespace memscope
