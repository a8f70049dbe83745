// The cache of what an input string means, by where it is: a hit must give
// what classifying the text gives, and the dozen keys of a trace entry must
// stay cached whatever their offsets.
#include "string_class_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace memscope {
namespace {

int g_classified = 0;

int lengthClass(std::string_view text) {
    ++g_classified;
    return int(text.size()) * 31 + (text.empty() ? 0 : text[0]);
}

using Cache = pickle::StringClassCache<int, lengthClass>;

pickle::Value strAt(uint64_t offset, uint32_t length) {
    return pickle::Value{pickle::Tag::Str, length, offset};
}

TEST(StringClassCache, AHitGivesWhatTheTextGives) {
    // 300 strings of one input, looked up in random order many times: more
    // than the cache holds, so slots are taken over and must never answer
    // for another string (same offset with another length included).
    std::string input;
    std::vector<std::pair<uint64_t, uint32_t>> strings;
    std::mt19937 rng(5);
    for (int i = 0; i < 300; ++i) {
        const uint32_t length = 1 + rng() % 12;
        strings.push_back({input.size(), length});
        for (uint32_t k = 0; k < length; ++k) input += char('a' + rng() % 26);
        if (i % 7 == 0) strings.push_back({strings.back().first, length - 1});  // a prefix
    }
    Cache cache;
    for (int round = 0; round < 20000; ++round) {
        const auto [offset, length] = strings[rng() % strings.size()];
        const std::string_view text(input.data() + offset, length);
        ASSERT_EQ(cache.of(strAt(offset, length), text), lengthClass(text)) << offset;
    }
}

TEST(StringClassCache, AnEntrysKeysAreClassifiedOnceWhereverTheyAre) {
    // Ten keys at random offsets of a 1 GB input, read a thousand times each
    // in entry order: each is classified when first seen, not again.
    std::mt19937_64 rng(9);
    const std::string text = "time_us";
    int rereads = 0;
    for (int set = 0; set < 1000; ++set) {
        Cache cache;
        std::vector<uint64_t> offsets;
        for (int k = 0; k < 10; ++k) offsets.push_back(rng() % (1ull << 30));
        g_classified = 0;
        for (int entry = 0; entry < 1000; ++entry)
            for (uint64_t offset : offsets) cache.of(strAt(offset, 7), text);
        rereads += g_classified - 10;
    }
    // Ten keys thrash only when nine of them share a window of eight slots.
    EXPECT_EQ(rereads, 0) << "keys evicting each other on every entry";
}

}  // namespace
}  // namespace memscope
