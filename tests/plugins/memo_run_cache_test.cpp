// The cache of memo-reference runs (memo_run_cache.h) and the machine's use of
// it: a list built from the same bytes as an earlier folded batch gets the
// same replacement without the handler, and everything else (a memo slot
// written again, a limit, a handler that did not ask) takes the ordinary path.
#include "memo_run_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "pickle_machine.h"

namespace memscope {
namespace {

using pickle::MemoRunCache;
using pickle::Tag;
using pickle::Value;

std::vector<uint8_t> longGets(std::initializer_list<uint32_t> indexes) {
    std::vector<uint8_t> b;
    for (uint32_t index : indexes) {
        b.push_back('j');
        for (int i = 0; i < 4; ++i) b.push_back(uint8_t(index >> (8 * i)));
    }
    return b;
}

TEST(MemoRunCache, FindsTheStoredRunThatEndsAtTheTerminator) {
    MemoRunCache cache;
    // Two runs with the same first 16 bytes: one of 4 references, one of 6.
    const auto shorter = longGets({1, 2, 3, 4});
    const auto longer = longGets({1, 2, 3, 4, 5, 6});
    const uint64_t hash = MemoRunCache::hashPrefix(shorter.data());
    ASSERT_EQ(hash, MemoRunCache::hashPrefix(longer.data()));
    cache.insert(shorter, 4, hash, Value{Tag::Stack, 0, 10});
    cache.insert(longer, 6, hash, Value{Tag::Stack, 0, 20});
    EXPECT_EQ(cache.entries(), 2u);

    auto input = longer;
    input.push_back('e');
    auto hit = cache.find(input.data(), input.size(), hash, 'e');
    ASSERT_NE(hit.replacement, nullptr);
    EXPECT_EQ(hit.replacement->bits, 20u);
    EXPECT_EQ(hit.length, longer.size());
    EXPECT_EQ(hit.values, 6u);

    input = shorter;
    input.push_back('e');
    hit = cache.find(input.data(), input.size(), hash, 'e');
    ASSERT_NE(hit.replacement, nullptr);
    EXPECT_EQ(hit.replacement->bits, 10u);

    // The same bytes going on with another reference: neither is this run.
    input = longGets({1, 2, 3, 4, 9});
    input.push_back('e');
    EXPECT_EQ(cache.find(input.data(), input.size(), hash, 'e').replacement, nullptr);
    // A stored run cut short by the end of the input is no hit either.
    EXPECT_EQ(cache.find(longer.data(), longer.size(), hash, 'e').replacement, nullptr);

    cache.clear();
    input = shorter;
    input.push_back('e');
    EXPECT_EQ(cache.find(input.data(), input.size(), hash, 'e').replacement, nullptr);
    EXPECT_TRUE(cache.enabled());
}

TEST(MemoRunCache, RunsShorterThanThePrefixAreNotStored) {
    MemoRunCache cache;
    const auto run = longGets({1, 2, 3});  // 15 bytes
    std::vector<uint8_t> padded = run;
    padded.resize(32, 'e');
    cache.insert(run, 3, MemoRunCache::hashPrefix(padded.data()), Value{Tag::Stack, 0, 1});
    EXPECT_EQ(cache.entries(), 0u);
}

TEST(MemoRunCache, TurnsItselfOffWhenRunsRarelyRepeat) {
    MemoRunCache cache;
    for (uint64_t i = 0; i < MemoRunCache::kTrialLookups; ++i) {
        auto run = longGets({uint32_t(i), uint32_t(i), uint32_t(i), uint32_t(i)});
        const uint64_t hash = MemoRunCache::hashPrefix(run.data());
        run.push_back('e');
        if (cache.find(run.data(), run.size(), hash, 'e').replacement) continue;
        run.pop_back();
        cache.insert(run, 4, hash, Value{Tag::Stack, 0, i});
    }
    EXPECT_FALSE(cache.enabled());
    EXPECT_EQ(cache.entries(), 0u);
}

// Folds every plain batch into a new numbered Stack value, and records, per
// list appended to the top-level list, what it was folded into.
struct FoldingHandler final : pickle::Handler {
    explicit FoldingHandler(bool caches) : caches(caches) {}
    bool onAppend(pickle::Machine& m, uint32_t, Value& item, bool&) override {
        if (const pickle::Container* c = m.deref(item); c && c->folded)
            folded_into.push_back(c->replacement.bits);
        return true;
    }
    void onBatchEnd(pickle::Machine&) override {}
    bool onPlainBatch(pickle::Machine& m, uint32_t list, std::span<const Value> items,
                      bool& consumed) override {
        std::vector<uint64_t> values;
        for (const Value& v : items) values.push_back(v.bits);
        batches.push_back(values);
        m.at(list).replacement = Value{Tag::Stack, 0, batches.size()};
        m.at(list).folded = true;
        consumed = true;
        return true;
    }
    bool cachesPlainBatches() const override { return caches; }

    bool caches;
    std::vector<std::vector<uint64_t>> batches;  // what onPlainBatch saw
    std::vector<uint64_t> folded_into;           // per inner list, in order
};

// PROTO 4, ints 100..(100+slots-1) memoized in slots 0..slots-1, then the
// top-level list (MARK) to which `lists` are appended, each `]` MARK `run` `e`.
struct PickleBuilder {
    std::vector<uint8_t> b{0x80, 4};
    void memoInts(uint32_t slots) {
        for (uint32_t i = 0; i < slots; ++i) {
            b.insert(b.end(), {'K', uint8_t(100 + i), 'r'});  // BININT1, LONG_BINPUT i
            for (int k = 0; k < 4; ++k) b.push_back(uint8_t(i >> (8 * k)));
            b.push_back('0');  // POP
        }
    }
    void openTop() { b.insert(b.end(), {']', '('}); }
    void list(const std::vector<uint8_t>& run) {
        b.insert(b.end(), {']', '('});
        b.insert(b.end(), run.begin(), run.end());
        b.push_back('e');
    }
    void overwrite(uint32_t slot, uint8_t value) {
        b.insert(b.end(), {'K', value, 'r'});
        for (int k = 0; k < 4; ++k) b.push_back(uint8_t(slot >> (8 * k)));
        b.push_back('0');
    }
    std::vector<std::byte> close() {
        b.insert(b.end(), {'e', '.'});
        std::vector<std::byte> out;
        for (uint8_t x : b) out.push_back(std::byte(x));
        return out;
    }
};

TEST(MemoRunFolding, RepeatedRunsFoldWithoutTheHandlerAndKeepTheirValues) {
    const auto a = longGets({0, 1, 2, 3, 4});
    const auto b = longGets({0, 1, 2, 3, 4, 5});  // same first 16 bytes as a
    for (const bool caches : {true, false}) {
        PickleBuilder p;
        p.memoInts(8);
        p.openTop();
        for (int i = 0; i < 50; ++i) p.list(i % 3 ? a : b);
        const auto bytes = p.close();
        FoldingHandler h(caches);
        pickle::Machine m(bytes, h);
        auto root = m.run(TaskContext{});
        ASSERT_TRUE(root.ok()) << root.message();
        ASSERT_EQ(h.folded_into.size(), 50u);
        // With the cache the handler sees each distinct run once; without, every one.
        EXPECT_EQ(h.batches.size(), caches ? 2u : 50u) << caches;
        for (size_t i = 0; i < 50; ++i) {
            const auto& seen = h.batches.at(h.folded_into[i] - 1);
            const std::vector<uint64_t> want =
                i % 3 ? std::vector<uint64_t>{100, 101, 102, 103, 104}
                      : std::vector<uint64_t>{100, 101, 102, 103, 104, 105};
            EXPECT_EQ(seen, want) << i;
        }
    }
}

TEST(MemoRunFolding, AMemoSlotWrittenAgainIsReadAgain) {
    const auto run = longGets({0, 1, 2, 3});
    PickleBuilder p;
    p.memoInts(4);
    p.openTop();
    p.list(run);
    p.list(run);
    p.overwrite(2, 7);  // CPython never does this; a hand-made file may
    p.list(run);
    p.list(run);
    const auto bytes = p.close();
    FoldingHandler h(true);
    pickle::Machine m(bytes, h);
    auto root = m.run(TaskContext{});
    ASSERT_TRUE(root.ok()) << root.message();
    ASSERT_EQ(h.batches.size(), 2u);
    EXPECT_EQ(h.batches[0], (std::vector<uint64_t>{100, 101, 102, 103}));
    EXPECT_EQ(h.batches[1], (std::vector<uint64_t>{100, 101, 7, 103}));
    EXPECT_EQ(h.folded_into, (std::vector<uint64_t>{1, 1, 2, 2}));
}

TEST(MemoRunFolding, ACachedRunStillHitsTheStackLimit) {
    // The run fits the first time; the second time three values already lie
    // under it, and the ordinary path's error must come as it would.
    const auto run = longGets({0, 1, 2, 3, 4, 5});
    PickleBuilder p;
    p.memoInts(6);
    p.openTop();  // stack: top list (1 value)
    p.list(run);
    p.b.insert(p.b.end(), {'K', 1, 'K', 2, 'K', 3});  // three ints on the stack
    p.list(run);
    const auto bytes = p.close();
    pickle::Limits limits;
    limits.max_stack = 9;  // 1 + list + 6 fits; 1 + 3 + list + 6 does not
    FoldingHandler h(true);
    pickle::Machine m(bytes, h, limits);
    auto root = m.run(TaskContext{});
    ASSERT_FALSE(root.ok());
    EXPECT_NE(root.message().find("stack deeper than the limit"), std::string::npos)
        << root.message();
}

}  // namespace
}  // namespace memscope
