#pragma once
// Bounds the distinct NVTX names a process interns into its trace. Names such
// as torch.autograd.profiler.emit_nvtx's ("aten::mm, seq = 812, op_id = 4,
// sizes = [...]") are unique per call: interned as they come, 200k ranges
// grew the string table (and the process) by ~40 MB. Past the cap a new name
// is replaced by its prefix class (the text before the first ',' or '(':
// "aten::mm"), and past a second, small cap on classes by one fixed name.
// Thread-safe; remembers 64-bit hashes only, so its own memory is bounded.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_set>

namespace memscope::cupti {

class NameCap {
public:
    static constexpr size_t kDefaultMaxNames = 50'000;
    static constexpr size_t kDefaultMaxClasses = 2'000;
    static constexpr std::string_view kCapReachedName = "nvtx range (name cap reached)";

    explicit NameCap(size_t max_names = kDefaultMaxNames, size_t max_classes = kDefaultMaxClasses)
        : max_names_(max_names), max_classes_(max_classes) {}

    struct Admitted {
        std::string_view name;   // what to intern: `name`, a prefix of it, or kCapReachedName
        bool replaced = false;   // not the name given
        bool first_cap = false;  // the first name ever replaced (say so once in the trace)
    };
    Admitted admit(std::string_view name);

    uint64_t replaced() const { return replaced_.load(std::memory_order_relaxed); }
    size_t maxNames() const { return max_names_; }

    // "aten::mm, seq = 3" -> "aten::mm"; "" when the name has no such prefix.
    static std::string_view prefixClass(std::string_view name);

private:
    const size_t max_names_;
    const size_t max_classes_;
    std::mutex mutex_;
    std::unordered_set<uint64_t> names_;  // hashes of names admitted as they are
    std::unordered_set<uint64_t> classes_;
    std::atomic<uint64_t> replaced_{0};
};

}  // namespace memscope::cupti
