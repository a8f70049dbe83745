#pragma once
// A Trace is one recorded process: metadata, events, interned frames and stacks,
// phases, annotations and the allocator state at the end of recording.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memscope/model/digest.h"
#include "memscope/model/event.h"
#include "memscope/model/module_scopes.h"
#include "memscope/model/op_scopes.h"
#include "memscope/model/prediction.h"
#include "memscope/model/run_metrics.h"
#include "memscope/model/types.h"

namespace memscope {

enum class TimeBase : uint8_t {
    Nanoseconds = 0,  // Event::time is ns since the Unix epoch
    EventIndex = 1,   // the source has no clock: Event::time is the event index
};

struct Frame {
    StringId function;
    StringId file;
    uint32_t line = 0;
    friend bool operator==(const Frame&, const Frame&) = default;
};

enum class PhaseKind : uint8_t {
    Step = 0,
    Forward = 1,
    Backward = 2,
    Optimizer = 3,
    Block = 4,
    Recompute = 5,
    Range = 6,  // NVTX range, record_function, anything else named
};

// A named time range, e.g. "step 2 / backward / block 5". Phases nest through
// `parent`; events point at the innermost phase active when they happened.
struct Phase {
    StringId name;
    PhaseKind kind = PhaseKind::Range;
    PhaseId parent;
    int32_t step = -1;    // -1 = not tied to a training step
    int32_t block = -1;   // -1 = not tied to a model block
    int16_t device = -1;  // -1 = all devices
    int64_t start = 0;    // same unit as Event::time
    int64_t end = 0;      // == start while still open at the end of recording
    // Found by memscope (inference.h, or an importer reading it from ops), not
    // recorded as a phase by the producer. Inferred phases are drawn and
    // reported as such, and never written to a trace file.
    bool inferred = false;
};

enum class AnnotationStage : uint8_t { Start = 0, End = 1, Instant = 2 };

// A point on an annotation track (external_annotations, NVTX marks).
struct Annotation {
    int64_t time = 0;
    StringId name;
    int16_t device = -1;
    AnnotationStage stage = AnnotationStage::Instant;
};

// Extra per-event data that only some events carry (compile_context,
// user_metadata, an oom's device_free), kept out of Event to keep it small.
struct EventAttribute {
    uint64_t event = 0;  // index into Trace::events
    StringId key;
    StringId value;
};

enum class BlockState : uint8_t { ActiveAllocated = 0, ActivePendingFree = 1, Inactive = 2 };

struct Block {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requested_size = 0;
    StackId stack;
    BlockState state = BlockState::Inactive;
};

struct Segment {
    uint64_t address = 0;
    uint64_t total_size = 0;
    uint64_t stream = 0;  // the raw stream value, not an index
    uint64_t pool_id_first = 0;
    uint64_t pool_id_second = 0;  // (0,0) = default pool
    StackId stack;
    uint32_t first_block = 0;  // range into AllocatorState::blocks
    uint32_t block_count = 0;
    int16_t device = 0;
    bool expandable = false;
    bool large = true;  // segment_type 'large' / 'small'
};

// The allocator's state when recording ended (a snapshot's `segments`).
struct AllocatorState {
    std::vector<Segment> segments;
    std::vector<Block> blocks;
    std::span<const Block> blocksOf(const Segment& s) const {
        return std::span<const Block>(blocks).subspan(s.first_block, s.block_count);
    }
};

struct TraceMetadata {
    // Where the data was first recorded or imported from: an importer id
    // ("pytorch-snapshot", "kineto") or a recorder ("memscope-train",
    // "memscope-cupti"); kept when the trace is converted to another format.
    std::string source_format;
    std::string name;  // e.g. policy or file stem
    TimeBase time_base = TimeBase::Nanoseconds;
    int64_t pid = -1;
    int32_t rank = -1;
    // Everything else as ordered key/value text (model config, policy, settings).
    std::vector<std::pair<std::string, std::string>> properties;

    const std::string* property(std::string_view key) const;
    void setProperty(std::string key, std::string value);

private:
    // key -> index in `properties`, built once there are many (300,000 keys
    // must not take a linear scan each); checked against `properties` on
    // every use, so code that edits `properties` directly stays correct.
    const std::pair<std::string, std::string>* find(std::string_view key) const;
    struct KeyHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    mutable std::unordered_map<std::string, size_t, KeyHash, std::equal_to<>> property_index_;
    mutable size_t indexed_ = 0;
};

// Interns strings to dense ids; id 0 is "".
class StringTable {
public:
    StringTable();
    StringTable(const StringTable& other);
    StringTable& operator=(const StringTable& other);
    StringTable(StringTable&&) noexcept = default;
    StringTable& operator=(StringTable&&) noexcept = default;

    StringId intern(std::string_view text);
    std::string_view get(StringId id) const;  // "" for an unknown id
    size_t size() const { return strings_.size(); }
    void reserve(size_t n);

private:
    void rebuildIndex();
    // A deque never moves its elements, so the index's keys can view them.
    std::deque<std::string> strings_;
    std::unordered_map<std::string_view, uint32_t> index_;
};

class Trace {
public:
    TraceMetadata metadata;
    std::vector<Event> events;
    std::vector<uint64_t> streams{0};  // Event::stream indexes this
    std::vector<Phase> phases;         // PhaseId n refers to phases[n - 1]
    std::vector<Annotation> annotations;
    std::vector<EventAttribute> attributes;  // sorted by event index
    std::optional<AllocatorState> allocator_state;
    std::optional<RunMetrics> metrics;  // what the producer measured besides memory
    // Where in the model: modules and the time ranges they ran in
    // (module_scopes.h). Apart from `phases`, which say when.
    ModuleTable modules;
    // What made the memory: the ops that ran and when (op_scopes.h).
    OpTable ops;
    // Set when memscope predicted this run from a measured one (prediction.h):
    // its events are a simulation, not a recording.
    std::optional<Prediction> prediction;
    // Set when the trace is a rank's digest (digest.h): its events are only
    // the allocations alive at the source's peak.
    std::optional<DigestSection> digest;
    // Categories memscope inferred for events whose recorded category is
    // Unknown (inference.h): empty, or one per event (rule Recorded where
    // nothing was inferred). Kept apart from Event::category, which stays
    // what was recorded; categoryOf() gives the one analyses use.
    std::vector<InferredCategory> inferred_categories;
    // Likewise for allocator_state's blocks (blocks alive at the end that the
    // trace never allocated): empty, or one per block.
    std::vector<InferredCategory> inferred_block_categories;

    // The recorded category, else the inferred one.
    Category categoryOf(uint64_t event) const {
        const Category recorded = events[event].category;
        if (recorded != Category::Unknown || event >= inferred_categories.size()) return recorded;
        return inferred_categories[event].category;
    }
    bool categoryInferred(uint64_t event) const {
        return events[event].category == Category::Unknown && event < inferred_categories.size() &&
               inferred_categories[event].rule != CategoryRule::Recorded;
    }

    StringTable strings;

    StringId internString(std::string_view s) { return strings.intern(s); }
    std::string_view string(StringId id) const { return strings.get(id); }

    FrameId internFrame(const Frame& frame);
    const Frame& frame(FrameId id) const;  // FrameId n -> frames()[n - 1]
    const std::vector<Frame>& frames() const { return frames_; }

    // Frames innermost first. An empty span gives StackId 0.
    StackId internStack(std::span<const FrameId> frames);
    std::span<const FrameId> stack(StackId id) const;
    size_t stackCount() const { return stack_offsets_.size() - 1; }  // incl. empty

    uint32_t internStream(uint64_t stream);
    PhaseId addPhase(const Phase& phase);
    const Phase* phase(PhaseId id) const;

    // Devices that have events or end-state segments, ascending.
    std::vector<int16_t> devices() const;

private:
    struct FrameHash {
        size_t operator()(const Frame& f) const;
    };
    std::vector<Frame> frames_;
    std::unordered_map<Frame, uint32_t, FrameHash> frame_index_;
    std::vector<FrameId> stack_frames_;
    std::vector<uint32_t> stack_offsets_{0, 0};  // stack n = [off[n], off[n+1])
    // Open addressing, linear probing, at most half full: each slot holds a
    // stack's 32-bit hash tag (high half) and its id + 1 (low half; 0 =
    // empty). One probe is one cache line, where a node-based multimap cost
    // three misses per lookup on a snapshot's millions of entries.
    std::vector<uint64_t> stack_slots_;
    size_t stack_slot_count_ = 0;
    void growStackSlots();
    std::unordered_map<uint64_t, uint32_t> stream_index_{{0, 0}};
};

}  // namespace memscope
