#pragma once
// The writers' interning state: assigns ids exactly as Trace does (so the
// reader, interning the same items in file order, gives back the same ids) and
// collects what is new since the last time it was taken for writing.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::native {

// Items added since the last take, each list starting at the id in first_*.
struct PendingTables {
    uint32_t first_string = 0;
    std::vector<std::string> strings;
    uint32_t first_frame = 1;
    std::vector<Frame> frames;
    uint32_t first_stack = 1;
    std::vector<uint32_t> stack_sizes;  // stacks, each stack_sizes[i] frames of stack_frames
    std::vector<FrameId> stack_frames;
    uint32_t first_stream = 1;
    std::vector<uint64_t> streams;
    uint32_t first_phase = 1;
    std::vector<Phase> phases;
    std::vector<std::pair<PhaseId, int64_t>> phase_ends;
    uint32_t first_module = 1;
    std::vector<Module> modules;
    ModuleSource module_source = ModuleSource::Recorded;  // the current one, written with modules
    bool module_source_changed = false;
    std::vector<ModuleScope> module_scopes;
    std::vector<OpScope> op_scopes;  // recorded ops (the writers store no inferred ones)
    std::vector<Annotation> annotations;
    std::vector<EventAttribute> attributes;
    std::optional<TraceMetadata> metadata;  // set when it changed: written whole
    std::optional<AllocatorState> allocator_state;
    std::optional<RunMetrics> metrics;     // set when it changed: written whole
    std::optional<Prediction> prediction;  // likewise
    std::optional<DigestSection> digest;   // likewise
};

class NativeTables {
public:
    explicit NativeTables(TraceMetadata metadata);

    StringId internString(std::string_view text);
    FrameId internFrame(const Frame& frame);
    StackId internStack(std::span<const FrameId> frames);
    uint32_t internStream(uint64_t stream);
    PhaseId addPhase(const Phase& phase);
    void endPhase(PhaseId id, int64_t end);
    uint32_t phaseCount() const { return phase_count_; }
    ModuleId addModule(const Module& module);
    void addModuleScope(const ModuleScope& scope);
    void setModuleSource(ModuleSource source);
    void addOpScope(const OpScope& scope);
    void addAnnotation(const Annotation& annotation);
    void addAttribute(uint64_t event, StringId key, StringId value);
    void setProperty(std::string key, std::string value);
    void setAllocatorState(const AllocatorState& state);
    void setRunMetrics(const RunMetrics& metrics);
    void setPrediction(const Prediction& prediction);
    void setDigest(const DigestSection& digest);

    // Ids that do not exist yet would make the reader drop the chunk that holds
    // them, so the writers store such references as 0 (none) instead.
    Event sanitize(const Event& event) const;
    // The same in place, for a batch (one call, not one per event).
    void sanitize(std::span<Event> events) const;
    uint64_t nextEventIndex() { return event_count_++; }
    void countEvents(uint64_t n) { event_count_ += n; }
    uint64_t eventCount() const { return event_count_; }

    PendingTables takePending();

private:
    StringId validString(StringId id) const;
    StackId validStack(StackId id) const;

    TraceMetadata metadata_;
    PendingTables pending_;

    struct TextHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    struct FrameHash {
        size_t operator()(const Frame& f) const;
    };
    std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> strings_;
    std::unordered_map<Frame, uint32_t, FrameHash> frames_;
    // A stack's key is its frame ids' bytes, so lookups need no allocation.
    std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> stacks_;
    std::unordered_map<uint64_t, uint32_t> streams_;
    uint32_t phase_count_ = 0;
    uint32_t module_count_ = 0;
    ModuleSource module_source_ = ModuleSource::Recorded;
    uint64_t event_count_ = 0;
};

}  // namespace memscope::native
