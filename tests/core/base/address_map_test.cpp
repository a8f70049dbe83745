// AddressMap: puts, takes and lookups checked against std::unordered_map over
// long random runs whose addresses collide and wrap around the table, so that
// every backward shift of a deletion is exercised.
#include "memscope/base/address_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memscope {
namespace {

std::vector<std::pair<uint64_t, uint32_t>> contents(const AddressMap<uint32_t>& m) {
    std::vector<std::pair<uint64_t, uint32_t>> out;
    m.forEach([&](uint64_t a, uint32_t v) { out.emplace_back(a, v); });
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::pair<uint64_t, uint32_t>> contents(
    const std::unordered_map<uint64_t, uint32_t>& m) {
    std::vector<std::pair<uint64_t, uint32_t>> out(m.begin(), m.end());
    std::sort(out.begin(), out.end());
    return out;
}

TEST(AddressMap, EmptyMapHasNothingToTake) {
    AddressMap<uint32_t> m;
    uint32_t v = 7;
    EXPECT_FALSE(m.take(0x1000, v));
    EXPECT_FALSE(m.take(UINT64_MAX, v));
    EXPECT_FALSE(m.contains(0));
    EXPECT_EQ(v, 7u);
    EXPECT_EQ(m.size(), 0u);
}

TEST(AddressMap, ASecondPutAtALiveAddressReplacesTheFirst) {
    AddressMap<uint32_t> m;
    m.put(0x2000, 1);
    m.put(0x2000, 2);
    EXPECT_EQ(m.size(), 1u);
    uint32_t v = 0;
    ASSERT_TRUE(m.take(0x2000, v));
    EXPECT_EQ(v, 2u);
    EXPECT_FALSE(m.take(0x2000, v));
}

// The table's empty marker is an address too: a hostile trace may use it.
TEST(AddressMap, TheLastAddressIsAnOrdinaryKey) {
    AddressMap<uint32_t> m;
    m.put(UINT64_MAX, 5);
    m.put(0, 6);
    EXPECT_TRUE(m.contains(UINT64_MAX));
    EXPECT_EQ(m.size(), 2u);
    EXPECT_EQ(contents(m), (std::vector<std::pair<uint64_t, uint32_t>>{{0, 6}, {UINT64_MAX, 5}}));
    uint32_t v = 0;
    ASSERT_TRUE(m.take(UINT64_MAX, v));
    EXPECT_EQ(v, 5u);
    EXPECT_FALSE(m.contains(UINT64_MAX));
    EXPECT_TRUE(m.contains(0));
}

// Random puts and takes, most of them in a small set of addresses (aligned
// as an allocator's are, plus odd ones): long probe runs, deletions inside
// them and runs that wrap past the table's end, while the table grows from
// empty through several sizes.
TEST(AddressMap, MatchesAnUnorderedMapOverRandomPutsAndTakes) {
    for (uint64_t seed : {1u, 2u, 3u}) {
        std::mt19937_64 rng(seed);
        AddressMap<uint32_t> m;
        std::unordered_map<uint64_t, uint32_t> want;
        const size_t distinct = seed == 1 ? 40 : seed == 2 ? 700 : 5000;
        for (uint32_t step = 0; step < 200000; ++step) {
            uint64_t address = (rng() % distinct) * 512;
            if (rng() % 16 == 0) address = rng();
            if (rng() % 64 == 0) address = UINT64_MAX;
            const bool put = rng() % 2 == 0;
            if (put) {
                m.put(address, step);
                want[address] = step;
            } else {
                uint32_t got = 0;
                const auto it = want.find(address);
                ASSERT_EQ(m.take(address, got), it != want.end()) << "step " << step;
                if (it != want.end()) {
                    ASSERT_EQ(got, it->second) << "step " << step;
                    want.erase(it);
                }
            }
            ASSERT_EQ(m.size(), want.size()) << "step " << step;
            if (step % 4096 == 0) {
                ASSERT_EQ(contents(m), contents(want)) << "step " << step;
                for (uint64_t a = 0; a < distinct * 512; a += 512)
                    ASSERT_EQ(m.contains(a), want.count(a) == 1) << "address " << a;
            }
        }
        ASSERT_EQ(contents(m), contents(want));
        m.clear();
        EXPECT_EQ(m.size(), 0u);
        EXPECT_TRUE(contents(m).empty());
        uint32_t v = 0;
        EXPECT_FALSE(m.take(0, v));
    }
}

}  // namespace
}  // namespace memscope
