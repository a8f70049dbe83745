#pragma once
// Trace entries mapped to events on a second thread while the pickle machine
// reads the next ones. Of a 1 GB snapshot's import on one core, reading the
// entries whole (Machine::flatDict and its run cache) was about two thirds and
// mapping their items to events (SnapshotMapper::mapEntry) a third.
//
// The reader adds each entry's items and gets its sequence number back; the
// entry's memo slot holds that number (Tag::Pending) until resolve() says
// which event it became. One worker maps full blocks in the order they were
// added; the block drain() finds partly filled is mapped on the caller's
// thread (so a small file never starts one), as is everything where no
// thread can be started.
//
// Whatever reads or writes what mapping writes (the trace's events,
// attributes and strings, the mapper's counters) calls drain() first: the
// worker is idle from then until the next add().

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "block_worker.h"
#include "pickle_value.h"

namespace memscope::pytorch_snapshot {

class EntryPipeline {
public:
    static constexpr uint64_t kDropped = UINT64_MAX;
    // Maps one entry's items to an event of `sink`: `event` is its index in
    // the trace, or kDropped. False on an error that ends the import, with its
    // message in `error`.
    using MapFn = std::function<bool(std::span<const pickle::Value> items, uint32_t sink,
                                     uint64_t& event, std::string& error)>;
    struct Failure {
        std::string message;
        uint64_t offset = 0;  // the entry's, as given to add()
    };

    explicit EntryPipeline(MapFn map, size_t block_entries = 4096);
    ~EntryPipeline() = default;  // the worker stops; what it has not mapped is dropped
    EntryPipeline(const EntryPipeline&) = delete;
    EntryPipeline& operator=(const EntryPipeline&) = delete;

    // Queues an entry (its items are copied) and returns its sequence number.
    uint64_t add(std::span<const pickle::Value> items, uint32_t sink, uint64_t offset);
    // `task` runs on the thread that maps, before the entries added after this
    // call (perhaps before some added before it): a reserve ahead of the events.
    void beforeNext(std::function<void()> task);
    // Waits until every entry added is mapped, or mapping stopped at an error.
    void drain();
    // True once mapping stopped at an error; any thread may poll it.
    bool failed() const { return failed_.load(std::memory_order_relaxed); }
    // After drain(): the first error, once.
    std::optional<Failure> takeFailure();
    // After drain(): what the entry `seq` became, as the memo holds it once
    // the ordinary path freed its dict: Entry{event}, or Dead when it was
    // dropped or never mapped (after an error).
    pickle::Value resolve(uint64_t seq) const;
    // Entries mapped on the worker so far (for tests: a small block size
    // must really hand blocks over).
    uint64_t mappedOnWorker() const { return on_worker_.load(std::memory_order_relaxed); }

private:
    // One write stream per entry, as add() is on the reader's path: a header
    // (aux = its item count, bits = its input offset), then its items.
    struct Block {
        std::vector<pickle::Value> values;  // sized once; `used` of them hold entries
        size_t used = 0;
        uint32_t entries = 0;
        std::vector<std::pair<uint32_t, uint32_t>> sinks;  // (first entry, sink) where it changes
        std::vector<std::function<void()>> tasks;
        uint64_t first_seq = 0;
        bool empty() const { return entries == 0 && tasks.empty(); }
        void clear();
    };
    // Entries [first_seq, first_seq + count) became consecutive events from
    // first_event on, but for the dropped ones among them (dropped_ from
    // dropped_before on).
    struct Run {
        uint64_t first_seq = 0;
        uint64_t first_event = kDropped;  // kDropped until one was mapped
        uint64_t count = 0;
        uint64_t dropped_before = 0;
    };
    void mapBlock(Block& block);  // on whichever thread maps; empties nothing
    void record(uint64_t seq, uint64_t event);
    void flush();
    void reset(Block& block);  // emptied, numbered from next_seq_, with room for a block
    static constexpr size_t kMaxQueued = 4;

    MapFn map_;
    const size_t block_entries_;
    Block current_;
    uint64_t next_seq_ = 0;
    bool idle_ = true;  // nothing added since the last drain()

    // Written by whichever thread maps; read by the reader after drain().
    std::vector<Run> runs_;
    std::vector<uint64_t> dropped_;  // sequence numbers, ascending
    std::optional<Failure> failure_;
    std::atomic<bool> failed_{false};
    std::atomic<uint64_t> on_worker_{0};
    // Last: its thread writes the members above, so it stops before they go.
    // The bound keeps the reader from running far ahead of a worker that fell
    // behind (a few MB of items at most).
    BlockWorker<Block> worker_{[this](Block& block) {
                                   mapBlock(block);
                                   on_worker_.fetch_add(block.entries, std::memory_order_relaxed);
                               },
                               kMaxQueued};
};

}  // namespace memscope::pytorch_snapshot
