// The import's fast paths against the plain ones they replace: memo-reference
// runs read in one loop, stacks interned on a second thread under provisional
// ids, vectors reserved for the projected input, entries read whole and mapped
// on a second thread. Each must give the same trace and the same errors as the
// straightforward path would.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <random>
#include <thread>
#include <unordered_map>

#include "deferred_stacks.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "pickle_machine.h"
#include "pickle_writer.h"
#include "projected_reserve.h"
#include "snapshot_mapper.h"
#include "snapshot_prologue.h"
#include "test_util.h"

namespace memscope {
namespace {

std::vector<FrameId> randomStack(std::mt19937& rng, uint32_t frames) {
    std::vector<FrameId> s(1 + rng() % 40);
    for (FrameId& f : s) f = FrameId(uint32_t(rng() % frames));
    return s;
}

TEST(DeferredStacks, RemapGivesTheIdsDirectInterningGives) {
    // Enough lists for many batches, with repeats so that interning dedupes.
    std::mt19937 rng(7);
    std::vector<std::vector<FrameId>> lists;
    for (int i = 0; i < 3000; ++i) lists.push_back(randomStack(rng, 50));
    for (int i = 0; i < 20000; ++i) lists.push_back(lists[rng() % lists.size()]);
    lists.push_back({});

    Trace direct;
    std::vector<StackId> expected;
    for (const auto& l : lists) expected.push_back(direct.internStack(l));

    Trace trace;
    std::vector<StackId> provisional;
    {
        pytorch_snapshot::DeferredStacks stacks(trace);
        for (const auto& l : lists) {
            provisional.push_back(stacks.submit(l));
            trace.events.push_back(Event{});
            trace.events.back().stack = provisional.back();
        }
        trace.allocator_state.emplace();
        trace.allocator_state->segments.push_back(Segment{});
        trace.allocator_state->segments[0].stack = provisional[5];
        trace.allocator_state->blocks.push_back(Block{});
        trace.allocator_state->blocks[0].stack = provisional[7];
        stacks.remap();
        EXPECT_TRUE(stacks.remapped());
        // After the remap, submit interns at once.
        EXPECT_EQ(stacks.submit(lists[3]), expected[3]);
    }
    ASSERT_EQ(trace.stackCount(), direct.stackCount());
    for (size_t i = 0; i < lists.size(); ++i) {
        ASSERT_EQ(trace.events[i].stack, expected[i]) << i;
        const auto got = trace.stack(trace.events[i].stack);
        ASSERT_TRUE(std::equal(got.begin(), got.end(), lists[i].begin(), lists[i].end())) << i;
    }
    EXPECT_EQ(trace.allocator_state->segments[0].stack, expected[5]);
    EXPECT_EQ(trace.allocator_state->blocks[0].stack, expected[7]);
    EXPECT_EQ(provisional.back(), StackId(0));  // no frames: the empty stack, at once
}

// Small inputs intern on the caller's thread; past one batch a worker does.
void checkDrain(size_t frames_before) {
    Trace trace;
    pytorch_snapshot::DeferredStacks stacks(trace);
    std::vector<FrameId> filler(20);
    for (size_t i = 0; i * filler.size() < frames_before; ++i) {
        for (size_t k = 0; k < filler.size(); ++k) filler[k] = FrameId(uint32_t(1000 + i + k));
        stacks.submit(filler);
    }
    const std::vector<FrameId> a{FrameId(1), FrameId(2)}, b{FrameId(3)};
    const StackId pa = stacks.submit(a);
    stacks.drain();
    const auto got = trace.stack(stacks.resolve(pa));
    EXPECT_TRUE(std::equal(got.begin(), got.end(), a.begin(), a.end()));
    const StackId pb = stacks.submit(b);
    const StackId pa2 = stacks.submit(a);
    EXPECT_NE(pa, pa2);  // provisional ids are per submission...
    stacks.drain();
    EXPECT_EQ(stacks.resolve(pa), stacks.resolve(pa2));  // ...interned ones per stack
    EXPECT_NE(stacks.resolve(pa), stacks.resolve(pb));
    EXPECT_EQ(trace.stack(stacks.resolve(pb)).size(), 1u);
}

TEST(DeferredStacks, DrainLetsTheCallerReadWhatWasSubmitted) {
    checkDrain(0);        // no worker
    checkDrain(100'000);  // a worker, started by the first full batch
}

TEST(DeferredStacks, DestroyedMidWayWithoutRemapStops) {
    // An import that fails or is cancelled drops the worker with work queued
    // (about 30 batches submitted, at most 8 queued): the destructor returns,
    // the worker writes nothing after it, and the trace keeps whole batches
    // interned in order (a prefix of what interning them directly gives),
    // never the batch still being filled.
    std::mt19937 rng(3);
    std::vector<std::vector<FrameId>> lists;
    for (int i = 0; i < 50000; ++i) lists.push_back(randomStack(rng, 1000));
    Trace direct;
    for (const auto& l : lists) direct.internStack(l);

    Trace trace;
    auto stacks = std::make_unique<pytorch_snapshot::DeferredStacks>(trace);
    for (const auto& l : lists) stacks->submit(l);
    std::promise<void> destroyed;
    std::future<void> done = destroyed.get_future();
    std::thread destroyer([&] {
        stacks.reset();
        destroyed.set_value();
    });
    if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
        std::fprintf(stderr, "DeferredStacks' destructor did not return in 60 s\n");
        std::abort();  // the worker still runs: returning would free what it uses
    }
    destroyer.join();

    const size_t interned = trace.stackCount();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(trace.stackCount(), interned) << "the worker interned after the destructor";
    EXPECT_LT(interned, direct.stackCount()) << "the unflushed batch was interned";
    for (size_t id = 0; id < interned; ++id) {
        const auto got = trace.stack(StackId(uint32_t(id)));
        const auto want = direct.stack(StackId(uint32_t(id)));
        ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << id;
    }
    // The caller's thread owns the trace again.
    const StackId last = trace.internStack(lists.back());
    const auto got = trace.stack(last);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), lists.back().begin(), lists.back().end()));
}

TEST(ProjectedReserve, GrowsForTheRestOfTheInputOnly) {
    std::vector<int> v(100);
    pickle::reserveProjected(v, 10, 1000, 1u << 20);  // 100 so far at 1%: 10,000 in all
    EXPECT_GE(v.capacity(), 10000u);
    EXPECT_LE(v.capacity(), 12500u);
    const size_t before = v.capacity();
    pickle::reserveProjected(v, 20, 1000, 1u << 20);  // the rate fell: no change
    EXPECT_EQ(v.capacity(), before);
    std::vector<int> capped(100);
    pickle::reserveProjected(capped, 1, 1000000, 5000);  // projects 100 M, capped
    EXPECT_LE(capped.capacity(), 5000u);
    std::vector<int> empty;
    pickle::reserveProjected(empty, 10, 1000, 1u << 20);
    EXPECT_EQ(empty.capacity(), 0u);
}

// A handler that keeps everything: the machine alone.
struct KeepAll final : pickle::Handler {
    bool onAppend(pickle::Machine&, uint32_t, pickle::Value&, bool&) override { return true; }
    void onBatchEnd(pickle::Machine&) override {}
};

std::vector<std::byte> bytesOf(std::initializer_list<int> ops) {
    std::vector<std::byte> b;
    for (int o : ops) b.push_back(std::byte(uint8_t(o)));
    return b;
}

void appendGet(std::vector<std::byte>& b, uint32_t index, bool long_form) {
    if (!long_form) {
        b.push_back(std::byte{'h'});
        b.push_back(std::byte(uint8_t(index)));
        return;
    }
    b.push_back(std::byte{'j'});
    for (int i = 0; i < 4; ++i) b.push_back(std::byte(uint8_t(index >> (8 * i))));
}

Result<pickle::Value> runMachine(const std::vector<std::byte>& b, pickle::Limits limits = {}) {
    KeepAll h;
    pickle::Machine m(b, h, limits);
    return m.run(TaskContext{});
}

// Closes the batch that `b` opened on its list (APPENDS, STOP), runs it and
// gives the list's items; none when the run fails.
std::vector<pickle::Value> appendedItems(std::vector<std::byte> b) {
    b.push_back(std::byte{'e'});
    b.push_back(std::byte{'.'});
    KeepAll h;
    pickle::Machine m(b, h);
    auto root = m.run(TaskContext{});
    EXPECT_TRUE(root.ok()) << root.message();
    if (!root.ok()) return {};
    pickle::Container* list = m.deref(*root);
    EXPECT_NE(list, nullptr);
    return list ? list->items : std::vector<pickle::Value>{};
}

TEST(MemoReferenceRuns, LongRunsCrossTheStackChunksInOrder) {
    // PROTO 4, EMPTY_LIST, 3 ints memoized (0..2), MARK, 10,000 references, APPENDS, STOP.
    auto b =
        bytesOf({0x80, 4, ']', 'K', 10, 0x94, '0', 'K', 11, 0x94, '0', 'K', 12, 0x94, '0', '('});
    for (int i = 0; i < 10000; ++i) appendGet(b, uint32_t(i % 3), i % 2 == 1);
    const std::vector<pickle::Value> items = appendedItems(b);
    ASSERT_EQ(items.size(), 10000u);
    for (size_t i = 0; i < items.size(); ++i) ASSERT_EQ(items[i].bits, 10 + i % 3) << i;
}

TEST(MemoReferenceRuns, AnUnsetSlotInARunNamesItsIndexAndOffset) {
    auto b = bytesOf({0x80, 4, 'K', 1, 0x94, '('});  // memo 0 = 1; MARK at offset 5
    appendGet(b, 0, false);                          // offset 6
    appendGet(b, 0, true);                           // offset 8
    appendGet(b, 9, true);                           // offset 13: never stored
    b.push_back(std::byte{'.'});
    auto r = runMachine(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("memo index 9 was never stored"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find("offset 13"), std::string::npos) << r.message();
}

TEST(MemoReferenceRuns, ATruncatedReferenceEndingARunIsTruncation) {
    auto b = bytesOf({0x80, 4, 'K', 1, 0x94, '('});
    appendGet(b, 0, false);
    b.push_back(std::byte{'j'});  // offset 8: LONG_BINGET with 2 of its 4 bytes
    b.push_back(std::byte{0});
    b.push_back(std::byte{0});
    auto r = runMachine(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("truncated"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find("LONG_BINGET"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find("offset 8"), std::string::npos) << r.message();
}

TEST(MemoReferenceRuns, ARunDeeperThanTheStackLimitStopsThere) {
    auto b = bytesOf({0x80, 4, 'K', 1, 0x94});
    for (int i = 0; i < 9000; ++i) appendGet(b, 0, false);
    b.push_back(std::byte{'.'});
    pickle::Limits limits;
    limits.max_stack = 5000;
    auto r = runMachine(b, limits);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("stack deeper than the limit"), std::string::npos) << r.message();
    // The int under them counts: reference 4,999 (0-based, at 5 + 2 x 4,999) is one too many.
    EXPECT_NE(r.message().find("offset " + std::to_string(5 + 2 * 4999)), std::string::npos)
        << r.message();
}

// The memo's limit: a slot past it fails with its index, whatever the size
// of the input; the limits an input gets grow with it, so that a 10 GB
// snapshot (about 100 million slots) reads, while a hostile file's memo
// stays within its own size.
TEST(MemoReferenceRuns, TheMemoLimitStopsASlotPastItAndGrowsWithTheInput) {
    auto b = bytesOf({0x80, 4, ']'});
    for (int i = 0; i < 6; ++i) b.push_back(std::byte{0x94});  // MEMOIZE: slots 0..5
    b.push_back(std::byte{'.'});
    pickle::Limits limits;
    limits.max_memo = 5;
    auto r = runMachine(b, limits);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("memo index 5 beyond the limit"), std::string::npos) << r.message();
    limits.max_memo = 6;
    EXPECT_TRUE(runMachine(b, limits).ok());

    const pickle::Limits small = pickle::Limits::forInput(1000);
    EXPECT_EQ(small.max_memo, 64ull << 20);
    EXPECT_EQ(small.max_live_items, 1ull << 20);
    const uint64_t ten_gb =
        10'775'063'854ull;  // memscope-gen-snapshot --mb 10240 --shape segmented
    const pickle::Limits big = pickle::Limits::forInput(ten_gb);
    EXPECT_EQ(big.max_memo, ten_gb / 16);
    EXPECT_GT(big.max_memo, 64ull << 20);
    EXPECT_EQ(big.max_live_items, pickle::Limits{}.max_live_items);
    // A slot is 16 bytes: the memo never outgrows the input.
    EXPECT_LE(big.max_memo * sizeof(pickle::Value), ten_gb);
}

// The integers between an entry's memo references are read inside the run:
// each must come out as the opcode alone would give it, including the LONG1
// forms the run leaves to the ordinary path (no bytes, 9 bytes, the end of
// the input within reach).
TEST(MemoReferenceRuns, IntegersInsideARunReadAsTheirOwnOpcodes) {
    // PROTO 4, EMPTY_LIST, memo 0 = 7 (popped), MARK, then the run.
    auto b = bytesOf({0x80, 4, ']', 'K', 7, 0x94, '0', '('});
    std::vector<int64_t> expected;
    auto get = [&](bool long_form) {
        appendGet(b, 0, long_form);
        expected.push_back(7);
    };
    auto raw = [&](std::initializer_list<int> bytes, int64_t value) {
        for (int x : bytes) b.push_back(std::byte(uint8_t(x)));
        expected.push_back(value);
    };
    get(false);
    raw({'K', 0xff}, 255);  // BININT1
    get(true);
    raw({'M', 0x34, 0x12}, 0x1234);           // BININT2
    raw({'J', 0xfe, 0xff, 0xff, 0xff}, -2);   // BININT, negative
    raw({0x8a, 1, 0x80}, -128);               // LONG1 of one byte, negative
    raw({0x8a, 2, 0x00, 0x80}, -32768);       // two's complement
    raw({0x8a, 3, 0x00, 0x80, 0x00}, 32768);  // a zero top byte keeps it positive
    raw({0x8a, 6, 0x00, 0xa6, 0x77, 0x11, 0x80, 0x7f}, 0x7f801177a600);  // an address
    raw({0x8a, 8, 1, 2, 3, 4, 5, 6, 7, 0x80}, int64_t(0x8007060504030201ull));
    raw({0x8a, 0}, 0);  // LONG1 of no bytes: the ordinary path
    get(false);
    raw({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}, -1);  // 2^64 - 1
    get(true);
    raw({0x8a, 3, 0x01, 0x00, 0xff}, -65535);  // within 10 bytes of the end
    const std::vector<pickle::Value> items = appendedItems(b);
    ASSERT_EQ(items.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(items[i].isInt()) << i;
        EXPECT_EQ(items[i].asI64(), expected[i]) << i;
    }
    // 2^64 - 1 does not fit a signed 64-bit integer: it is read as unsigned.
    EXPECT_EQ(items[expected.size() - 3].tag, pickle::Tag::UInt);
}

TEST(MemoReferenceRuns, AnIntegerCutShortInARunIsTruncationAtItsOpcode) {
    auto b = bytesOf({0x80, 4, 'K', 1, 0x94, '('});
    appendGet(b, 0, false);                                    // offset 6
    for (int x : {int('J'), 1, 2}) b.push_back(std::byte(x));  // offset 8: BININT, 2 of 4 bytes
    auto r = runMachine(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("truncated: opcode BININT needs 4"), std::string::npos)
        << r.message();
    EXPECT_NE(r.message().find("offset 8"), std::string::npos) << r.message();
}

// A snapshot's top-level dict up to its one device's trace list, whose
// first batch the caller opens (MARK) and closes; and what closes them all.
void beginOneDeviceTrace(pickle::Writer& w) {
    test::beginDeviceTraces(w);
    w.emptyList();
}
void endOneDeviceTrace(pickle::Writer& w) {
    w.appends();  // the trace's last batch
    w.appends();  // device_traces
    w.setItems();
    w.end();
}

TEST(SnapshotImportFastPaths, ManyStacksAcrossBatchesKeepTheirFrames) {
    // A snapshot whose frames lists span many of the interner's batches:
    // every entry's stack must come back with its own frames, in order.
    const auto path = test::tempPath("memscope_fast_paths.pickle");
    std::mt19937 rng(11);
    constexpr int kFrames = 300, kEntries = 6000;
    std::vector<std::vector<int>> stacks;
    {
        std::FILE* f = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        pickle::Writer w(f);
        beginOneDeviceTrace(w);
        std::vector<uint32_t> frame_memo;
        w.mark();
        for (int e = 0; e < kEntries; ++e) {
            if (e % 500 == 499) {
                w.appends();
                w.mark();
            }
            auto& s = stacks.emplace_back(1 + rng() % 30);
            for (int& fr : s) fr = int(rng() % kFrames);
            w.emptyDict();
            w.mark();
            w.string("action");
            w.string("alloc");
            w.string("addr");
            w.integer(4096 * (e + 1));
            w.string("size");
            w.integer(512);
            w.string("frames");
            w.emptyList();
            w.mark();
            for (int fr : s) {
                if (size_t(fr) < frame_memo.size() && frame_memo[size_t(fr)]) {
                    w.get(frame_memo[size_t(fr)] - 1);
                    continue;
                }
                w.emptyDict();
                const uint32_t id = w.memoize();
                w.mark();
                w.string("filename");
                w.string("f" + std::to_string(fr) + ".py");
                w.string("name");
                w.string("fn");
                w.string("line");
                w.integer(fr);
                w.setItems();
                if (frame_memo.size() <= size_t(fr)) frame_memo.resize(size_t(fr) + 1, 0);
                frame_memo[size_t(fr)] = id + 1;
            }
            w.appends();
            w.setItems();
        }
        endOneDeviceTrace(w);
        ASSERT_TRUE(w.status().ok());
        std::fclose(f);
    }
    auto t = pytorch_snapshot::importFile(path.string());
    std::filesystem::remove(path);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), size_t(kEntries));
    for (int e = 0; e < kEntries; ++e) {
        const auto frames = t->stack(t->events[size_t(e)].stack);
        ASSERT_EQ(frames.size(), stacks[size_t(e)].size()) << e;
        for (size_t k = 0; k < frames.size(); ++k)
            ASSERT_EQ(t->frame(frames[k]).line, uint32_t(stacks[size_t(e)][k])) << e << " " << k;
    }
}

// One device's trace entries of many shapes, written in batches of `batch`
// entries: CPython's 1000, or all in one. Entries after a list's first batch
// are read whole (Machine's flat dicts); in one batch, none is. Shapes that
// the whole read leaves to the ordinary path sit among the ones it takes: a
// new string, a pool_id tuple, a frames list the run cache has not seen, an
// empty or one-frame list, a 9-byte address, a size of 2^63 and more (the
// entry is dropped), a float time, None, booleans and floats as values, and
// a frames list shared with an entry before (a memo reference to it),
// strings written afresh inside an entry, and an entry's dict appended
// again (a memo reference to the entry before, which becomes a second event).
// Entry `bad_size_at`, when given, is an ordinary one with a negative size;
// after entry `bad_reference_after` comes a reference to a memo slot never
// stored.
std::vector<std::byte> mixedEntries(int entries, int batch, uint64_t seed, int bad_size_at = -1,
                                    int bad_reference_after = -1) {
    const auto path = test::tempPath("memscope_flat_" + std::to_string(batch) + ".pickle");
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return {};
    std::mt19937_64 rng(seed);
    pickle::Writer w(f);
    beginOneDeviceTrace(w);
    // Strings and frames written once, referenced after (as CPython does).
    std::vector<std::pair<std::string, uint32_t>> memo;
    auto str = [&](const std::string& text) {
        for (const auto& [t, id] : memo)
            if (t == text) return w.get(id);
        w.string(text);
        memo.emplace_back(text, w.memoize());
    };
    std::vector<uint32_t> frame_memo(24, UINT32_MAX);
    auto frame = [&](size_t k) {
        if (frame_memo[k] != UINT32_MAX) return w.get(frame_memo[k]);
        w.emptyDict();
        frame_memo[k] = w.memoize();
        w.mark();
        str("filename");
        str("/home/me/model_" + std::to_string(k % 3) + ".py");
        str("name");
        str("layer" + std::to_string(k));
        str("line");
        w.integer(int64_t(10 + k));
        w.setItems();
    };
    // Stacks of 9 frames and more are runs the cache keeps (16 bytes and
    // more); the shorter ones are not.
    std::vector<std::vector<size_t>> stacks(4);
    for (size_t k = 0; k < 12; ++k) stacks[0].push_back(k);
    for (size_t k = 0; k < 15; ++k) stacks[1].push_back(23 - k);
    for (size_t k = 0; k < 9; ++k) stacks[2].push_back(2 * k);
    for (size_t k = 0; k < 20; ++k) stacks[3].push_back((7 * k) % 24);
    stacks.push_back({5});  // one frame
    stacks.push_back({});   // none
    static const char* const kActions[] = {"alloc",         "free_requested", "free_completed",
                                           "segment_alloc", "free",           "annotate"};
    uint32_t last_list = UINT32_MAX;
    uint32_t last_entry = UINT32_MAX;  // the entry before, when it was kept
    w.mark();
    for (int e = 0; e < entries; ++e) {
        if (e > 0 && e % batch == 0) {
            w.appends();
            w.mark();
        }
        uint64_t shape = rng() % 40;
        if (e == bad_size_at) shape = 20;
        if (shape == 15 && last_entry != UINT32_MAX) w.get(last_entry);
        w.emptyDict();
        last_entry = shape == 3 ? UINT32_MAX : w.memoize();
        if (shape == 3) w.memoize();
        w.mark();
        str("action");
        if (shape == 0)
            str("custom_action_" + std::to_string(e));  // a new string: the ordinary path
        else
            str(kActions[rng() % std::size(kActions)]);
        str("addr");
        if (shape == 1)
            w.unsignedInteger(0xffffffffffff0000ull);  // nine bytes of LONG1
        else if (shape == 2)
            w.none();
        else
            w.integer(int64_t(0x7f0000000000 + 512 * (rng() % 100000)));
        str("size");
        if (shape == 3)
            w.unsignedInteger(uint64_t(1) << 63);  // dropped
        else if (e == bad_size_at)
            w.integer(-5);
        else
            w.integer(int64_t(512 << (rng() % 12)));
        str("stream");
        w.integer(shape == 4 ? 93825000000000 : 0);
        if (shape != 5) {
            str("time_us");
            if (shape == 6)
                w.floating(1.7e15 + double(e) + 0.25);
            else
                w.integer(int64_t(1'700'000'000'000'000 + 10 * e));
        }
        str("frames");
        if (shape == 12 && last_list != UINT32_MAX) {
            w.get(last_list);  // the list object of an entry before, shared
        } else {
            w.emptyList();
            last_list = w.memoize();
            const auto& s = stacks[shape == 7 ? 4 : shape == 8 ? 5 : rng() % 4];
            if (!s.empty()) {
                w.mark();
                for (size_t k : s) frame(k);
                w.appends();
            }
        }
        if (shape == 9) {
            str("pool_id");
            w.integer(1);
            w.integer(2);
            w.tuple2();
        }
        if (shape == 10) {
            str("compile_context");
            str("N/A");
            str("user_metadata");
            str("");
        }
        if (shape == 13) {
            // A string object per entry (PyTorch 2.5 writes 'N/A' so): written
            // afresh with its own memo store each time.
            str("compile_context");
            w.string("N/A");
            w.memoize();
        }
        if (shape == 14) {
            str("note");
            w.string(std::string(300, 'x'));  // BINUNICODE, four length bytes
            w.memoize();
        }
        if (shape == 11) {
            str("compile_context");
            str("torch/_dynamo frame 3");
            str("flag");
            w.boolean(true);
            str("ratio");
            w.floating(0.5);
        }
        w.setItems();
        if (e == bad_reference_after) w.get(1u << 30);
        w.boundary();
    }
    endOneDeviceTrace(w);
    const bool ok = w.status().ok();
    std::fclose(f);
    std::vector<std::byte> bytes = ok ? test::readBytes(path) : std::vector<std::byte>{};
    std::filesystem::remove(path);
    return bytes;
}

struct Imported {
    Result<Trace> trace;
    std::vector<LoadWarning> warnings;
};
Imported importWithWarnings(std::span<const std::byte> bytes) {
    Imported out{makeError("not run"), {}};
    TaskContext ctx;
    ctx.warnings = &out.warnings;
    out.trace = pytorch_snapshot::importBytes(bytes, ctx);
    return out;
}

std::string frameText(const Trace& t, StackId id) {
    std::string text;
    for (FrameId f : t.stack(id)) {
        const Frame& fr = t.frame(f);
        text += std::string(t.string(fr.function)) + "@" + std::string(t.string(fr.file)) + ":" +
                std::to_string(fr.line) + ";";
    }
    return text;
}

// Two imports of the same entries: event for event, attribute for attribute.
// Stacks are compared by their frames' text once per pair of ids, then held
// to the same pairing (the text of every event's stack took 40 s under ASan).
void expectSameTrace(const Trace& a, const Trace& b) {
    ASSERT_EQ(a.events.size(), b.events.size());
    std::unordered_map<uint32_t, uint32_t> same_stack;  // a's id -> b's
    for (size_t i = 0; i < a.events.size(); ++i) {
        const Event& x = a.events[i];
        const Event& y = b.events[i];
        ASSERT_EQ(x.kind, y.kind) << i;
        ASSERT_EQ(x.time, y.time) << i;
        ASSERT_EQ(x.address, y.address) << i;
        ASSERT_EQ(x.size, y.size) << i;
        ASSERT_EQ(x.device, y.device) << i;
        ASSERT_EQ(x.phase, y.phase) << i;
        ASSERT_EQ(a.streams[x.stream], b.streams[y.stream]) << i;
        const auto [pair, first] = same_stack.emplace(x.stack.value, y.stack.value);
        if (first) {
            ASSERT_EQ(frameText(a, x.stack), frameText(b, y.stack)) << i;
        } else {
            ASSERT_EQ(pair->second, y.stack.value) << i;
        }
    }
    ASSERT_EQ(a.attributes.size(), b.attributes.size());
    for (size_t i = 0; i < a.attributes.size(); ++i) {
        ASSERT_EQ(a.attributes[i].event, b.attributes[i].event) << i;
        ASSERT_EQ(a.string(a.attributes[i].key), b.string(b.attributes[i].key)) << i;
        ASSERT_EQ(a.string(a.attributes[i].value), b.string(b.attributes[i].value)) << i;
    }
    ASSERT_EQ(a.phases.size(), b.phases.size());
}

TEST(SnapshotImportFastPaths, EntriesReadWholeGiveWhatBuiltDictsGive) {
    constexpr int kEntries = 5000;
    const std::vector<std::byte> batched = mixedEntries(kEntries, 1000, 3);
    const std::vector<std::byte> single = mixedEntries(kEntries, kEntries, 3);
    ASSERT_FALSE(batched.empty());
    ASSERT_FALSE(single.empty());
    const Imported fast = importWithWarnings(batched);
    const Imported plain = importWithWarnings(single);
    ASSERT_TRUE(fast.trace.ok()) << fast.trace.message();
    ASSERT_TRUE(plain.trace.ok()) << plain.trace.message();
    const Trace& a = *fast.trace;
    const Trace& b = *plain.trace;
    // Some entries were dropped (sizes of 2^63), some appended twice; the
    // rest are events.
    ASSERT_GT(a.events.size(), size_t(kEntries) * 9 / 10);
    expectSameTrace(a, b);
    EXPECT_EQ(fast.warnings, plain.warnings);
    EXPECT_FALSE(fast.warnings.empty());  // the dropped entries are named
}

// A snapshot read with its entries read whole, mapped in blocks of
// `block` entries (small ones on the pipeline's worker), or with every entry
// built as a dict first.
struct ReadOptions {
    bool whole = true;
    size_t block = 4096;
    const std::atomic<bool>* cancel = nullptr;
    uint64_t* mapped_on_worker = nullptr;
};
Result<Trace> importReading(std::span<const std::byte> bytes, std::vector<LoadWarning>& warnings,
                            ReadOptions options) {
    Trace trace;
    pytorch_snapshot::SnapshotMapper mapper(trace);
    mapper.setReadsEntriesWhole(options.whole);
    mapper.setPipelineBlock(options.block);
    pickle::Machine machine(bytes, mapper);
    TaskContext ctx;
    ctx.warnings = &warnings;
    ctx.cancel = options.cancel;
    Result<pickle::Value> root = machine.run(ctx);
    if (options.mapped_on_worker) *options.mapped_on_worker = mapper.entriesMappedOnWorker();
    if (!root) return root.error();
    if (auto ok = mapper.finish(machine, *root, ctx); !ok) return ok.error();
    for (LoadWarning& w : mapper.warnings()) warnings.push_back(std::move(w));
    return trace;
}
Result<Trace> importReading(std::span<const std::byte> bytes, bool whole,
                            std::vector<LoadWarning>& warnings) {
    return importReading(bytes, warnings, ReadOptions{.whole = whole});
}

// Entries mapped on the pipeline's worker, in blocks small enough that the
// reader's own callbacks (an entry left to the ordinary path, a frame, an
// entry's dict appended again) fall between blocks and drain it: the same
// trace as entries built as dicts.
TEST(SnapshotImportFastPaths, EntriesMappedOnTheWorkerGiveWhatBuiltDictsGive) {
    constexpr int kEntries = 5000;
    const std::vector<std::byte> batched = mixedEntries(kEntries, 1000, 11);
    const std::vector<std::byte> single = mixedEntries(kEntries, kEntries, 11);
    ASSERT_FALSE(batched.empty());
    ASSERT_FALSE(single.empty());
    std::vector<LoadWarning> wb;
    const Result<Trace> b = importReading(single, false, wb);
    ASSERT_TRUE(b.ok()) << b.message();
    for (size_t block : {size_t(1), size_t(3), size_t(64), size_t(4096)}) {
        SCOPED_TRACE(block);
        std::vector<LoadWarning> wa;
        uint64_t on_worker = 0;
        const Result<Trace> a =
            importReading(batched, wa, ReadOptions{.block = block, .mapped_on_worker = &on_worker});
        ASSERT_TRUE(a.ok()) << a.message();
        expectSameTrace(*a, *b);
        EXPECT_EQ(wa, wb);
        // One in five entries or so is left to the ordinary path, which
        // drains the pipeline: only the smallest blocks fill before it.
        if (block <= 3) {
            EXPECT_GT(on_worker, 0u);
        } else if (block == 4096) {
            EXPECT_EQ(on_worker, 0u);
        }
    }
}

// An entry that fails where it is mapped, on the worker or not, is the
// import's error, named at its own offset, even when the machine meets an
// error of its own further on (the input cut short after it).
TEST(SnapshotImportFastPaths, AnEntryThatFailsOnTheWorkerComesBeforeALaterError) {
    const std::vector<std::byte> bytes = mixedEntries(5000, 1000, 7, 3000);
    ASSERT_FALSE(bytes.empty());
    std::string first;
    for (size_t block : {size_t(1), size_t(3), size_t(4096)}) {
        SCOPED_TRACE(block);
        for (size_t size : {bytes.size(), bytes.size() * 4 / 5}) {
            std::vector<LoadWarning> w;
            const Result<Trace> r =
                importReading(std::span(bytes.data(), size), w, ReadOptions{.block = block});
            ASSERT_FALSE(r.ok());
            EXPECT_NE(r.message().find("'size' is not a non-negative integer"), std::string::npos)
                << r.message();
            if (first.empty()) first = r.message();
            EXPECT_EQ(r.message(), first);
        }
    }
    // A reference to a memo slot never stored, right after the entry or a
    // few entries later, while the entry may still wait for its block: the
    // machine's error comes after the entry's.
    for (int after : {3000, 3001, 3004}) {
        SCOPED_TRACE(after);
        const std::vector<std::byte> poisoned = mixedEntries(5000, 1000, 7, 3000, after);
        for (size_t block : {size_t(1), size_t(4096)}) {
            std::vector<LoadWarning> w;
            const Result<Trace> r = importReading(poisoned, w, ReadOptions{.block = block});
            ASSERT_FALSE(r.ok());
            EXPECT_EQ(r.message(), first);
        }
    }
    // Without the bad entry, that reference is the error.
    std::vector<LoadWarning> w;
    const Result<Trace> r = importReading(mixedEntries(5000, 1000, 7, -1, 3000), w, ReadOptions{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("was never stored"), std::string::npos) << r.message();
}

// Cancelled while entries are queued for the worker: the import says so and
// the worker stops (ASan sees no use of the freed input after). Batches of
// 10: the whole read starts after the first ten entries, long before the
// machine's first poll of the cancel, 4096 steps in (an entry read whole is
// one step).
TEST(SnapshotImportFastPaths, ACancelWithEntriesQueuedStops) {
    const std::vector<std::byte> bytes = mixedEntries(20000, 10, 13);
    ASSERT_FALSE(bytes.empty());
    std::atomic<bool> cancel{true};
    std::vector<LoadWarning> w;
    uint64_t on_worker = 0;
    const Result<Trace> r = importReading(
        bytes, w, ReadOptions{.block = 1, .cancel = &cancel, .mapped_on_worker = &on_worker});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), "cancelled");
    EXPECT_GT(on_worker, 0u);       // entries were handed over before the cancel
    EXPECT_LT(on_worker, 10'000u);  // and it stopped far from the end
}

// Every real snapshot: the same trace, attribute for attribute, whichever
// way its entries are read (PyTorch 2.0 to 2.5 writers, C++ frames, a new
// 'N/A' string per entry, entries without frames, three devices).
TEST(SnapshotImportFastPaths, RealSnapshotsReadWholeGiveWhatBuiltDictsGive) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(test::fixtures() / "snapshots")) {
        const auto ext = entry.path().extension();
        if (ext != ".pickle" && ext != ".pkl") continue;
        SCOPED_TRACE(entry.path().filename().string());
        const std::vector<std::byte> bytes = test::readBytes(entry.path());
        std::vector<LoadWarning> wa, wb;
        const Result<Trace> a = importReading(bytes, true, wa);
        const Result<Trace> b = importReading(bytes, false, wb);
        ASSERT_EQ(a.ok(), b.ok());
        if (!a.ok()) {
            EXPECT_EQ(a.message(), b.message());
            continue;
        }
        expectSameTrace(*a, *b);
        EXPECT_EQ(wa, wb);
        ++files;
    }
    EXPECT_GE(files, 6u);
}

// Cut anywhere inside entries that would be read whole, the import gives
// the ordinary path's truncation error: the whole read leaves a cut entry to
// it. (The parser tests run under ASan: no read past the end either.)
TEST(SnapshotImportFastPaths, AnEntryCutShortIsTheOrdinaryTruncation) {
    const std::vector<std::byte> bytes = mixedEntries(1500, 1000, 5);
    ASSERT_FALSE(bytes.empty());
    const size_t from = bytes.size() * 3 / 4;
    for (size_t cut = from; cut < from + 600; ++cut) {
        const Imported r = importWithWarnings(std::span(bytes.data(), cut));
        ASSERT_FALSE(r.trace.ok()) << cut;
        EXPECT_NE(r.trace.message().find("truncated"), std::string::npos)
            << cut << ": " << r.trace.message();
    }
}

// A snapshot past the 64 MiB from which the import's read-ahead copies the
// input into huge pages, and large enough that the copies behind the
// unpickler are given back while its memo strings still point into them:
// the file gives what its bytes give, event for event.
TEST(SnapshotImportFastPaths, AFileCopiedIntoHugePagesGivesWhatItsBytesGive) {
    const auto path = test::tempPath("memscope_huge_page_input.pickle");
    constexpr int kEntries = 120000, kFrames = 24;
    {
        std::FILE* f = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        std::mt19937 rng(5);
        pickle::Writer w(f);
        beginOneDeviceTrace(w);
        // Each frame written where it first appears, referenced after.
        std::vector<uint32_t> frame_memo(kFrames, UINT32_MAX);
        auto frame = [&](int k) {
            if (frame_memo[size_t(k)] != UINT32_MAX) return w.get(frame_memo[size_t(k)]);
            w.emptyDict();
            frame_memo[size_t(k)] = w.memoize();
            w.mark();
            w.string("filename");
            w.string("model_" + std::to_string(k % 4) + ".py");
            w.string("name");
            w.string("layer" + std::to_string(k));
            w.string("line");
            w.integer(k + 1);
            w.setItems();
        };
        // Eight stacks of 420 frames: the frames lists real snapshots
        // repeat, 840 bytes of memo references each.
        std::vector<std::vector<int>> stacks(8, std::vector<int>(420));
        for (auto& s : stacks)
            for (int& fr : s) fr = int(rng() % kFrames);
        w.mark();
        for (int e = 0; e < kEntries; ++e) {
            if (e > 0 && e % 1000 == 0) {
                w.appends();
                w.mark();
            }
            w.emptyDict();
            w.mark();
            w.string("action");
            w.string(e % 2 ? "free_completed" : "alloc");
            w.string("addr");
            w.integer(4096 * (e / 2 + 1));
            w.string("size");
            w.integer(512 + 64 * (e % 7));
            w.string("frames");
            w.emptyList();
            w.mark();
            for (int fr : stacks[size_t(e / 2) % stacks.size()]) frame(fr);
            w.appends();
            w.setItems();
        }
        endOneDeviceTrace(w);
        ASSERT_TRUE(w.status().ok());
        std::fclose(f);
    }
    ASSERT_GT(std::filesystem::file_size(path), std::uintmax_t(96) << 20);
    auto from_file = pytorch_snapshot::importFile(path.string());
    const std::vector<std::byte> bytes = test::readBytes(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(from_file.ok()) << from_file.message();
    const Imported from_bytes = importWithWarnings(bytes);
    ASSERT_TRUE(from_bytes.trace.ok()) << from_bytes.trace.message();
    ASSERT_EQ(from_file->events.size(), size_t(kEntries));
    expectSameTrace(*from_file, *from_bytes.trace);
}

}  // namespace
}  // namespace memscope
