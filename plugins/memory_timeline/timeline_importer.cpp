// Turns memory-timeline rows into alloc/free events with categories. Neither
// export names tensors, so addresses are made up: each allocation gets a fresh
// one, and a decrease frees allocations of its category so that the live bytes
// per category equal torch's own curve at every time.
#include <filesystem>
#include <iterator>
#include <map>

#include "json_input.h"
#include "memscope/plugins/memory_timeline.h"
#include "timeline_reader.h"

namespace memscope::memory_timeline {
namespace {

constexpr uint64_t kSyntheticBase = 0xE000000000000000ull;

Category categoryOf(int64_t index) {
    return index >= 0 && index < kCategoryCount ? Category(index) : Category::Unknown;
}

class EventMaker {
public:
    explicit EventMaker(Trace& t) : t_(t) {}

    void alloc(int64_t time, uint64_t size, Category c) {
        const uint64_t a = kSyntheticBase | ++next_;
        push(time, EventKind::Alloc, a, size, c);
        live_[index(c)].emplace_hint(live_[index(c)].end(), a, size);
        by_size_[{index(c), size}].push_back(a);
    }
    // Raw export: frees of the same tensor carry its exact size; prefer that.
    void freeExact(int64_t time, uint64_t size, Category c) {
        auto it = by_size_.find({index(c), size});
        while (it != by_size_.end() && !it->second.empty()) {
            const uint64_t a = it->second.back();
            it->second.pop_back();
            // Entries freed by freeBytes since are stale here: skipped.
            auto& live = live_[index(c)];
            if (auto l = live.find(a); l != live.end()) {
                live.erase(l);
                push(time, EventKind::FreeCompleted, a, size, c);
                return;
            }
        }
        freeBytes(time, size, c);
    }
    // Coalesced export: only the category's total is known; free the newest
    // allocations, splitting the last one if the decrease ends inside it.
    void freeBytes(int64_t time, uint64_t bytes, Category c) {
        auto& live = live_[index(c)];
        while (bytes > 0 && !live.empty()) {
            const auto last = std::prev(live.end());
            const auto [a, size] = *last;
            live.erase(last);
            push(time, EventKind::FreeCompleted, a, size, c);
            if (size > bytes) {
                alloc(time, size - bytes, c);
                return;
            }
            bytes -= size;
        }
        if (bytes > 0)
            push(time, EventKind::FreeCompleted, kSyntheticBase | ++next_, bytes,
                 c);  // predates the trace
    }

private:
    void push(int64_t time, EventKind kind, uint64_t a, uint64_t size, Category c) {
        Event e;
        e.time = time;
        e.kind = kind;
        e.address = a;
        e.size = size;
        e.category = c;
        t_.events.push_back(e);
    }
    Trace& t_;
    uint64_t next_ = 0;
    // Per category, address -> size. Addresses grow with each allocation, so
    // the last entry is the newest; a free finds its entry in O(log n).
    std::array<std::map<uint64_t, uint64_t>, kCategoryCount> live_;
    std::map<std::pair<int, uint64_t>, std::vector<uint64_t>> by_size_;
};

// Cancel is polled every 4096 rows: pairing a free costs O(log n), so a
// cancel takes effect within milliseconds.
constexpr size_t kCancelPollRows = 4096;

Result<Trace> build(TimelineRows rows, std::string name, const TaskContext& ctx) {
    Trace trace;
    trace.metadata.source_format = std::string(kId);
    trace.metadata.name = std::move(name);
    trace.metadata.time_base = TimeBase::Nanoseconds;
    trace.metadata.setProperty(
        "memory_timeline.shape",
        rows.coalesced ? "coalesced [times_us, sizes]" : "raw [t_ns, action, bytes, category]");
    trace.metadata.setProperty("memory_timeline.device",
                               "the export names no device: shown as device 0");
    EventMaker make(trace);
    if (!rows.coalesced) {
        // t = -1: tensors that predate profiling; they start with the first event.
        int64_t t_min = -1;
        for (const auto& r : rows.raw)
            if (r[0] >= 0 && (t_min < 0 || r[0] < t_min)) t_min = r[0];
        size_t row = 0;
        for (const auto& [t, action, bytes, cat] : rows.raw) {
            if (++row % kCancelPollRows == 0 && ctx.cancelled()) return cancelledError();
            if (action < 1 || action > 4)
                return makeError("not a torch.profiler memory timeline: action " +
                                 std::to_string(action));
            const int64_t time = t < 0 ? std::max<int64_t>(t_min, 0) : t;
            const Category c = categoryOf(cat);
            if (bytes >= 0)
                make.alloc(time, uint64_t(bytes), c);
            else
                make.freeExact(time, uint64_t(0) - uint64_t(bytes), c);
        }
        trace.events.shrink_to_fit();
        return trace;
    }
    std::array<int64_t, kCategoryCount> prev{};
    for (size_t i = 0; i < rows.times.size(); ++i) {
        if (i % kCancelPollRows == kCancelPollRows - 1 && ctx.cancelled()) return cancelledError();
        int64_t time;
        if (__builtin_mul_overflow(rows.times[i], int64_t(1000), &time))
            return makeError("not a torch.profiler memory timeline: time out of range");
        const auto& s = rows.sizes[i];
        for (int c = 0; c < kCategoryCount; ++c) {
            const int64_t now =
                size_t(c + 1) < s.size() ? s[size_t(c + 1)] : 0;  // sizes[0] is a plot baseline
            int64_t delta = 0;
            if (__builtin_sub_overflow(now, prev[size_t(c)], &delta))
                return makeError("not a torch.profiler memory timeline: sizes out of range");
            prev[size_t(c)] = now;
            if (delta > 0)
                make.alloc(time, uint64_t(delta), Category(c));
            else if (delta < 0)
                make.freeBytes(time, uint64_t(0) - uint64_t(delta), Category(c));
        }
    }
    return trace;
}

std::string stemOf(const std::string& path) {
    std::string name = std::filesystem::path(path).filename().string();
    for (std::string_view ext : {".gz", ".json", ".raw"})
        if (name.ends_with(ext)) name.resize(name.size() - ext.size());
    return name;
}

}  // namespace

int probe(std::span<const std::byte> head, std::string_view path) {
    const std::string text = json_input::headText(head);
    const size_t i = text.find_first_not_of(" \t\r\n");
    if (i == std::string::npos || text[i] != '[') return 0;
    const size_t j = text.find_first_not_of(" \t\r\n", i + 1);
    if (j == std::string::npos || text[j] != '[') return 0;  // both shapes open with "[["
    if (path.ends_with(".raw.json.gz") || path.ends_with(".raw.json")) return 95;
    return path.ends_with(".json") || path.ends_with(".json.gz") ? 70 : 40;
}

Result<Trace> importFile(const std::string& path, const TaskContext& ctx) {
    auto src = json_input::openFile(path);
    if (!src) return src.error();
    auto rows = readRows(**src, ctx);
    if (!rows) return rows.error();
    return build(std::move(*rows), stemOf(path), ctx);
}

Result<Trace> importBytes(std::span<const std::byte> bytes, const TaskContext& ctx,
                          std::string name) {
    auto src = json_input::openMemory(bytes);
    auto rows = readRows(*src, ctx);
    if (!rows) return rows.error();
    return build(std::move(*rows), std::move(name), ctx);
}

}  // namespace memscope::memory_timeline
