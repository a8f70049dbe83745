#pragma once
// Maps the pickle of a memory snapshot straight into a Trace: the unpickler's
// Handler. Trace entries and segments are converted the moment they are appended
// to their list, so only the entry being read exists as pickle values; frames
// and stacks are interned once per pickle memo slot. Entries read whole are
// mapped on a second thread while the unpickler reads on (entry_pipeline.h):
// every other callback that touches what mapping writes drains it first.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "deferred_stacks.h"
#include "entry_pipeline.h"
#include "memscope/base/page_warmer.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "module_annotations.h"
#include "pickle_machine.h"
#include "string_class_cache.h"

namespace memscope::pytorch_snapshot {

// The keys of a trace entry the mapper reads: first those the event is made
// of (kEventFields of them), then those kept as attributes; any other key is
// kept as an attribute under its own name.
enum class EntryKey : uint8_t {
    Action,
    Addr,
    Size,
    Stream,
    TimeUs,
    Frames,
    DeviceFree,
    CompileContext,
    UserMetadata,
    PoolId,
    Other,
};
inline constexpr size_t kEventFields = size_t(EntryKey::Frames) + 1;
EntryKey entryKeyOf(std::string_view key);

// What an entry's 'action' makes of it: its kind ('annotate' and unknown
// actions are markers), and whether the name is kept as an attribute because
// the kind does not say it ('free', unknown actions).
struct ActionClass {
    EventKind kind = EventKind::Marker;
    bool keep_name = false;
};
ActionClass actionClassOf(std::string_view action);

class SnapshotMapper final : public pickle::Handler {
public:
    explicit SnapshotMapper(Trace& trace);

    bool onAppend(pickle::Machine& m, uint32_t list, pickle::Value& item, bool& keep) override;
    void onBatchEnd(pickle::Machine& m) override;
    bool onPlainBatch(pickle::Machine& m, uint32_t list, std::span<const pickle::Value> items,
                      bool& consumed) override;
    void unfold(pickle::Machine& m, uint32_t list) override;
    // A frames list folds into the stack of its frames, whichever list it is.
    bool cachesPlainBatches() const override { return true; }
    // Trace entries after a list's first batch: converted as the machine
    // reads them, without building their dicts.
    bool takesFlatDicts(pickle::Machine& m, uint32_t list) override;
    // Off: every entry is built as a dict first (the tests compare the two).
    void setReadsEntriesWhole(bool on) { whole_entries_ = on; }
    // ... and mapped to events on a second thread (entry_pipeline.h), in
    // blocks of this many entries (tests make them small).
    pickle::FlatDict onFlatDict(pickle::Machine& m, uint32_t list,
                                std::span<const pickle::Value> items, pickle::Value& memo) override;
    void setPipelineBlock(size_t entries) { pipeline_block_ = entries; }
    uint64_t entriesMappedOnWorker() const { return entries_ ? entries_->mappedOnWorker() : 0; }
    void onProgress(uint64_t reached, uint64_t total) override;
    void settle(pickle::Machine& m) override;

    // After the machine stopped: places events on devices, sets the allocator
    // state, annotations and metadata from the top-level value. Polls
    // ctx.cancelled() every few thousand items.
    Result<void> finish(pickle::Machine& m, const pickle::Value& root, const TaskContext& ctx = {});
    // Values dropped or cut while mapping: one warning per reason, counted,
    // naming the first.
    std::vector<LoadWarning> warnings() const;

private:
    struct EventSink {
        std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) in trace.events
        int32_t device = kUnassigned;
    };
    struct SegmentSink {
        std::vector<Segment> segments;
        std::vector<Block> blocks;
    };
    static constexpr int32_t kUnassigned = INT32_MIN;
    static constexpr uint64_t kDropped = EntryPipeline::kDropped;  // mapEntry's, when dropped
    static constexpr uint32_t kSinkOfList = UINT32_MAX;  // mapEntry: the list's sink, made if new
    // The two kinds of list a container's sink tag names (its low bit).
    static constexpr uint32_t kEventSink = 0;
    static constexpr uint32_t kSegmentSink = 1;

    struct Drops {
        uint64_t count = 0;
        std::string first;
    };
    bool duplicateEntry(pickle::Machine& m, uint32_t list, uint64_t event);
    StringId internStr(pickle::Machine& m, const pickle::Value& v);
    bool convertEntry(pickle::Machine& m, uint32_t list, uint32_t dict);
    // A trace entry's items (key, value, ...) as an event of `sink` (or, for
    // kSinkOfList, of `list`'s): `event` is its index, or kDropped when it was
    // dropped (counted in its Drops). False on an error: its message is in
    // entry_error_, or m.fail() took it (a list that mixes kinds). With a
    // sink given, and items that hold no container (an entry read whole), it
    // reads nothing of `m` but the input (m.str), so the pipeline's worker
    // may run it while the machine reads on.
    bool mapEntry(pickle::Machine& m, uint32_t list, uint32_t sink,
                  std::span<const pickle::Value> items, uint64_t& event);
    bool entryError(std::string message) {
        entry_error_ = std::move(message);
        return false;
    }
    bool failEntry(pickle::Machine& m);  // m.fail(entry_error_) where one is set
    bool convertSegment(pickle::Machine& m, uint32_t list, uint32_t dict);
    bool convertFrame(pickle::Machine& m, uint32_t dict, pickle::Value& out);
    StackId stackOf(pickle::Machine& m, const pickle::Value& frames);
    uint32_t sinkFor(pickle::Machine& m, uint32_t list, uint32_t type);
    void releaseTree(pickle::Machine& m, const pickle::Value& v, int depth, bool tuples);
    void attribute(StringId key, std::string_view value);

    Result<void> placeDevices(pickle::Machine& m, const pickle::Value& traces, bool host);
    Result<void> addSegments(pickle::Machine& m, const pickle::Value& list, bool host);
    void addAnnotations(pickle::Machine& m, const pickle::Value& list);
    void finishEvents();
    void buildPhases();
    void assignEventPhases(const std::vector<uint8_t>& open_to_end);
    // True once finish's context is cancelled; polled every 4096 calls.
    bool stop() {
        if ((++polls_ & 0xfff) == 0 && ctx_ && ctx_->cancelled()) cancelled_ = true;
        return cancelled_;
    }

    Trace& trace_;
    DeferredStacks stacks_{trace_};
    std::vector<EventSink> event_sinks_;
    std::vector<SegmentSink> segment_sinks_;
    std::vector<uint32_t> pending_release_;
    std::vector<FrameId> frame_buf_;
    std::vector<uint8_t> has_time_;         // per event: time_us was present
    PageWarmer events_warmer_;              // ahead of trace_.events' writer
    std::vector<ModuleMark> module_marks_;  // external_annotations of module scopes
    uint64_t events_without_time_ = 0;
    uint64_t events_with_time_ = 0;
    bool whole_entries_ = true;
    bool saw_compile_context_ = false;
    bool saw_user_metadata_ = false;
    std::string scratch_;
    pickle::StringClassCache<EntryKey, entryKeyOf> entry_keys_;
    pickle::StringClassCache<ActionClass, actionClassOf> actions_;
    // The stream of the entry before: nearly every entry has the one before's.
    uint64_t last_stream_ = 0;
    uint32_t last_stream_id_ = UINT32_MAX;
    std::unordered_map<uint64_t, StringId> long_strings_;  // input offset -> id
    Drops bad_addr_, huge_size_, bad_time_, cut_text_, huge_segment_, huge_block_;
    uint64_t entries_seen_ = 0;
    uint64_t segments_seen_ = 0;
    const TaskContext* ctx_ = nullptr;
    uint64_t polls_ = 0;
    bool cancelled_ = false;
    StringId key_device_free_, key_compile_context_, key_user_metadata_, key_action_, key_pool_id_;
    std::string entry_error_;
    // onFlatDict's own: entry_keys_ is the mapping's, which the worker uses.
    pickle::StringClassCache<EntryKey, entryKeyOf> first_keys_;
    size_t pipeline_block_ = 4096;
    // Last: its worker uses the members above, so it stops before they go.
    std::unique_ptr<EntryPipeline> entries_;
};

}  // namespace memscope::pytorch_snapshot
