#pragma once
// The predicted trace as edits of the measured one: allocations whose birth
// or free moves, that are dropped, copied into a recompute, or joined by a
// temporary; gaps of time inserted into backward for recomputes. build()
// applies them all at once, so that edits name times in the measured run's
// clock however many gaps come before them.
//
// Edits name allocations by their index in the device timeline's intervals.
// Allocations that move or are copied get fresh addresses, so that an
// address the measured run reused in between never holds two at once.

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"
#include "memscope/whatif/layer_chain.h"

namespace memscope::detail {

// Where an event goes among the events at the same time. A measured event
// keeps its own key; what an edit puts right after a measured event takes one
// of the slots after it; what an edit places by time alone is synthetic, in
// the order the edits were made, after every measured key.
class OrderKey {
public:
    enum class Slot : uint8_t {
        Event = 0,             // the measured event itself
        Beside = 1,            // right after it: a copy freed where it was freed,
                               // a birth moved to where another op completed
        TemporaryBirth = 2,    // a temporary of the op that ends with it
        TemporaryFree = 3,     // and its free
        FreeWhenComplete = 4,  // an allocation freed once its op (and temporaries) ended
    };
    static OrderKey after(uint64_t event, Slot slot) {
        return OrderKey((event << kSlotBits) | uint64_t(slot));
    }
    static OrderKey synthetic(uint64_t ordinal) { return OrderKey(kSynthetic + ordinal); }

    // The measured event this key sits at or after; none for a synthetic key.
    std::optional<uint64_t> event() const {
        if (value_ >= kSynthetic) return std::nullopt;
        return value_ >> kSlotBits;
    }
    // The key right after this one (a free that must follow its birth).
    OrderKey next() const { return OrderKey(value_ + 1); }
    // clang-tidy 14 takes the 0 of the synthesized `<=> 0` for a null pointer.
    // NOLINTNEXTLINE(modernize-use-nullptr)
    friend auto operator<=>(const OrderKey&, const OrderKey&) = default;

private:
    static constexpr unsigned kSlotBits = 3;  // room for Slot's values
    // Above every measured event's keys (events < 2^59).
    static constexpr uint64_t kSynthetic = uint64_t{1} << 62;
    explicit OrderKey(uint64_t value) : value_(value) {}
    uint64_t value_ = 0;
};

class TraceRewrite {
public:
    TraceRewrite(const Trace& measured, const DeviceTimeline& device)
        : measured_(measured), device_(device) {}

    struct Gap {
        size_t index = 0;
    };
    // Inserts `duration` of time right after measured time `after`: what
    // happened later happens that much later.
    Gap insertGap(int64_t after, int64_t duration);
    PhaseId addRecomputePhase(Gap gap, std::string name, int32_t block, PhaseId parent);
    // The forward scopes within [start, end) again, as recompute scopes in
    // the gap, their times against `start` multiplied by `scale`.
    void addRecomputeScopes(Gap gap, int64_t start, int64_t end, double scale);

    enum class At { InGap, Measured };
    // A copy of allocation `id` born `alloc_offset` into the gap, freed at
    // `free` (an offset into the gap, or a measured time).
    void addCopy(uint32_t id, Gap gap, int64_t alloc_offset, At at, int64_t free, PhaseId phase);

    void moveFree(uint32_t id, int64_t measured_time);  // freed then instead (earlier or later)
    void moveFreeIntoGap(uint32_t id, Gap gap, int64_t offset);  // freed in a recompute
    void drop(uint32_t id);                                      // never allocated
    // The measured event after which the op that made allocation `id` had
    // finished: the last of the device's events before its next allocation
    // (the op's own temporaries freed, the next op not begun).
    uint64_t completion(uint32_t id) const;
    // A temporary of `size` born and freed when `id` is complete.
    void addTemporaryAfter(uint32_t id, uint64_t size);
    void freeWhenComplete(uint32_t id);  // after its temporaries
    void moveBirth(uint32_t id, int64_t measured_time);
    // Born when `other` is complete, before its temporaries.
    void moveBirthToCompletion(uint32_t id, uint32_t other);

    Trace build(const Prediction& prediction, const std::vector<int64_t>& recompute_per_step) const;

private:
    // Where an event goes: a measured time (shifted by the gaps before it)
    // or a gap's own time, and its order among events at the same time.
    struct Place {
        int64_t time = 0;
        std::optional<size_t> gap;  // time is an offset into this gap
        OrderKey order = OrderKey::synthetic(0);
    };
    struct Edit {
        std::optional<Place> birth, free;
        bool dropped = false;
        bool fresh_address = false;
    };
    struct Copy {
        uint32_t id = 0;
        Place birth, free;
        PhaseId phase;
        std::optional<Category> category;  // instead of the allocation's own
        uint64_t size = 0;                 // 0 = the allocation's own
    };
    struct GapSpec {
        int64_t after = 0, duration = 0;
    };
    struct NewPhase {
        size_t gap = 0;
        std::string name;
        int32_t block = -1;
        PhaseId parent;
    };
    struct NewScope {
        size_t gap = 0;
        int64_t offset = 0, length = 0;
        ModuleId module;
    };

    const Trace& measured_;
    const DeviceTimeline& device_;
    std::unordered_map<uint32_t, Edit> edits_;
    std::vector<Copy> copies_;
    std::vector<GapSpec> gaps_;
    std::vector<NewPhase> phases_;
    std::vector<NewScope> scopes_;
    uint64_t next_order_ = 0;

    OrderKey synthetic() { return OrderKey::synthetic(next_order_++); }

    // The steps of build(), in order (trace_rewrite.cpp).
    class GapTimes;
    struct Pending;
    std::vector<uint32_t> editedEvents() const;
    // Allocations alive at the measured trace's end that an edit frees.
    std::vector<uint32_t> freedAtLast() const;
    std::vector<Pending> movedEvents(const GapTimes& times, std::span<const uint32_t> edited_event,
                                     const std::unordered_map<uint32_t, uint64_t>& moved_address,
                                     std::vector<uint8_t>& stays) const;
    void addCopies(const GapTimes& times, uint64_t& fresh, std::vector<Pending>& out) const;
    void copyTables(const GapTimes& times, Trace& t) const;
    void mergeEvents(const GapTimes& times, std::vector<Pending> moved, std::vector<uint8_t> stays,
                     Trace& t) const;
    void copyEndState(const std::unordered_map<uint32_t, uint64_t>& moved_address, Trace& t) const;
    void copyModules(const GapTimes& times, Trace& t) const;
};

}  // namespace memscope::detail
