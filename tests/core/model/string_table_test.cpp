// The string table: each string interned once, ids that survive copies.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "memscope/model/trace.h"

using namespace memscope;

TEST(StringTable, InternsOnceAndSurvivesCopies) {
    StringTable t;
    EXPECT_EQ(t.intern(""), StringId(0));
    const StringId a = t.intern("forward");
    // Enough strings to force the storage to grow many times.
    for (int i = 0; i < 10000; ++i) t.intern("s" + std::to_string(i));
    EXPECT_EQ(t.intern("forward"), a);
    StringTable copy = t;
    EXPECT_EQ(copy.get(a), "forward");
    EXPECT_EQ(copy.intern("forward"), a);
    EXPECT_EQ(copy.intern("new one"), StringId(uint32_t(t.size())));
    EXPECT_EQ(t.get(StringId(999999)), "");
}
