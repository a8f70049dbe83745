// The pipeline that maps trace entries on a second thread: what each entry
// became, in the order added, whichever thread mapped it; its first error;
// work queued before it is destroyed.
#include "entry_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace memscope {
namespace {

using pickle::Tag;
using pickle::Value;
using pytorch_snapshot::EntryPipeline;

// A stand-in for the mapper: entry k holds one integer item, k; entries
// whose k is a multiple of `drop_every` are dropped; the one numbered
// `fail_at` fails. Events are numbered by a counter that the test may also
// advance between drains, as the reader's own events do.
struct FakeMapper {
    uint64_t next_event = 0;
    uint64_t drop_every = 5;
    uint64_t fail_at = UINT64_MAX;
    std::vector<uint64_t> seen;            // items, in the order mapped
    std::vector<uint64_t> event_of_entry;  // by k; kDropped for dropped
    bool map(std::span<const Value> items, uint32_t sink, uint64_t& event, std::string& error) {
        const uint64_t k = items[0].bits;
        seen.push_back(k);
        if (k == fail_at) {
            error = "entry " + std::to_string(k) + " is bad (sink " + std::to_string(sink) + ")";
            return false;
        }
        if (event_of_entry.size() <= k) event_of_entry.resize(k + 1, EntryPipeline::kDropped);
        if (k % drop_every != 0) event_of_entry[k] = event = next_event++;
        return true;
    }
    EntryPipeline::MapFn fn() {
        return [this](std::span<const Value> items, uint32_t sink, uint64_t& event,
                      std::string& error) { return map(items, sink, event, error); };
    }
};

uint64_t addEntry(EntryPipeline& p, uint64_t k, uint32_t sink = 0) {
    const Value items[2] = {Value{Tag::Int, 0, k}, Value{Tag::Int, 0, k * 7}};
    return p.add(items, sink, 1000 + k);
}

void expectResolvedAsMapped(const EntryPipeline& p, const FakeMapper& m, uint64_t entries) {
    ASSERT_EQ(m.seen.size(), entries);
    for (uint64_t k = 0; k < entries; ++k) {
        ASSERT_EQ(m.seen[k], k) << "mapped out of order";
        const Value v = p.resolve(k);
        if (m.event_of_entry[k] == EntryPipeline::kDropped) {
            EXPECT_EQ(v.tag, Tag::Dead) << k;
        } else {
            EXPECT_EQ(v.tag, Tag::Entry) << k;
            EXPECT_EQ(v.bits, m.event_of_entry[k]) << k;
        }
    }
}

TEST(EntryPipeline, EveryEntryResolvesToTheEventItBecameAcrossBlocksAndDrains) {
    for (size_t block : {size_t(1), size_t(3), size_t(64), size_t(4096)}) {
        SCOPED_TRACE(block);
        FakeMapper m;
        uint64_t k = 0;
        {
            EntryPipeline p(m.fn(), block);
            // Drains at uneven places, with events of the reader's own
            // between them (which break the runs of consecutive events).
            for (int round = 0; round < 40; ++round) {
                for (int i = 0; i < 7 + round * 3; ++i) {
                    EXPECT_EQ(addEntry(p, k), k);
                    ++k;
                }
                p.drain();
                if (round % 3 == 0) m.next_event += 2;
            }
            expectResolvedAsMapped(p, m, k);
            EXPECT_FALSE(p.failed());
            EXPECT_FALSE(p.takeFailure());
            // Small blocks are handed to the worker; a file whose entries fit
            // one block never starts it.
            if (block <= 64)
                EXPECT_GT(p.mappedOnWorker(), 0u);
            else
                EXPECT_EQ(p.mappedOnWorker(), 0u);
        }
    }
}

TEST(EntryPipeline, RunsThatStartWithDroppedEntriesResolve) {
    FakeMapper m;
    m.drop_every = 1;  // k % 1 == 0: all dropped ...
    EntryPipeline p(m.fn(), 2);
    for (uint64_t k = 0; k < 6; ++k) addEntry(p, k);
    p.drain();
    m.drop_every = 4;  // ... then every fourth
    for (uint64_t k = 6; k < 40; ++k) addEntry(p, k);
    p.drain();
    expectResolvedAsMapped(p, m, 40);
    EXPECT_EQ(p.resolve(1000).tag, Tag::Dead);  // never added
}

TEST(EntryPipeline, TheFirstErrorStopsMappingAndNamesItsEntrysOffset) {
    for (size_t block : {size_t(1), size_t(4), size_t(4096)}) {
        SCOPED_TRACE(block);
        FakeMapper m;
        m.fail_at = 9;
        EntryPipeline p(m.fn(), block);
        for (uint64_t k = 0; k < 30; ++k) addEntry(p, k, 3);
        p.drain();
        EXPECT_TRUE(p.failed());
        const auto failure = p.takeFailure();
        ASSERT_TRUE(failure);
        EXPECT_EQ(failure->message, "entry 9 is bad (sink 3)");
        EXPECT_EQ(failure->offset, 1009u);
        EXPECT_FALSE(p.takeFailure());  // given once
        // Nothing after the failing entry was mapped.
        ASSERT_EQ(m.seen.size(), 10u);
        EXPECT_EQ(m.seen.back(), 9u);
        EXPECT_EQ(p.resolve(8).tag, Tag::Entry);
        EXPECT_EQ(p.resolve(9).tag, Tag::Dead);
        EXPECT_EQ(p.resolve(20).tag, Tag::Dead);
    }
}

TEST(EntryPipeline, SinksAndItemsReachTheMapperAsAdded) {
    std::vector<std::pair<uint32_t, uint64_t>> got;
    EntryPipeline p(
        [&](std::span<const Value> items, uint32_t sink, uint64_t& event, std::string&) {
            uint64_t sum = 0;
            for (const Value& v : items) sum += v.bits;
            got.emplace_back(sink, sum);
            event = got.size() - 1;
            return true;
        },
        3);
    std::vector<std::pair<uint32_t, uint64_t>> want;
    for (uint64_t k = 0; k < 50; ++k) {
        // Entries of 0 to 40 items (more than a block's room per entry on
        // average), their sink changing every few entries.
        std::vector<Value> items;
        uint64_t sum = 0;
        for (uint64_t i = 0; i < (k * 13) % 41; ++i)
            items.push_back(Value{Tag::Int, 0, k + i}), sum += k + i;
        const uint32_t sink = uint32_t(k / 4 % 3);
        p.add(items, sink, k);
        want.emplace_back(sink, sum);
    }
    p.drain();
    EXPECT_EQ(got, want);
}

TEST(EntryPipeline, TasksRunBeforeTheEntriesAddedAfterThem) {
    std::atomic<uint64_t> mapped{0};
    std::vector<uint64_t> mapped_when_run;
    EntryPipeline p(
        [&](std::span<const Value>, uint32_t, uint64_t& event, std::string&) {
            event = mapped++;
            return true;
        },
        4);
    std::vector<uint64_t> added_when_queued;
    const Value item{Tag::Int, 0, 1};
    for (uint64_t k = 0; k < 100; ++k) {
        p.add(std::span(&item, 1), 0, k);
        if (k % 9 == 0) {
            added_when_queued.push_back(k + 1);
            p.beforeNext([&] { mapped_when_run.push_back(mapped.load()); });
        }
    }
    p.drain();
    ASSERT_EQ(mapped_when_run.size(), added_when_queued.size());
    for (size_t i = 0; i < mapped_when_run.size(); ++i)
        EXPECT_LE(mapped_when_run[i], added_when_queued[i]) << i;
}

TEST(EntryPipeline, DestroyedWithBlocksQueuedStops) {
    std::atomic<uint64_t> mapped{0};
    {
        EntryPipeline p(
            [&](std::span<const Value>, uint32_t, uint64_t& event, std::string&) {
                event = mapped++;
                return true;
            },
            1);
        const Value item{Tag::Int, 0, 1};
        for (uint64_t k = 0; k < 10'000; ++k) p.add(std::span(&item, 1), 0, k);
    }  // no drain: the worker stops, what it had not mapped is dropped
    EXPECT_LE(mapped.load(), 10'000u);
}

}  // namespace
}  // namespace memscope
