// The allocator's settings: PYTORCH_CUDA_ALLOC_CONF's syntax, what snapshots
// record, and the size rounding they decide.
#include "memscope/allocator/allocator_settings.h"

#include <gtest/gtest.h>

namespace memscope {
namespace {

constexpr uint64_t MiB = 1024 * 1024;

TEST(AllocatorSettings, ParsesPytorchCudaAllocConf) {
    auto s = applyAllocatorConf({},
                                "expandable_segments:True, max_split_size_mb:512,"
                                "roundup_power2_divisions:4,garbage_collection_threshold:0.8");
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(s->expandable_segments);
    EXPECT_EQ(s->max_split_size, 512 * MiB);
    for (uint32_t d : s->roundup_power2_divisions) EXPECT_EQ(d, 4u);
    EXPECT_DOUBLE_EQ(s->garbage_collection_threshold, 0.8);
    EXPECT_EQ(toAllocatorConf(*s),
              "expandable_segments:True,max_split_size_mb:512,roundup_power2_divisions:4,"
              "garbage_collection_threshold:0.8");
    // Round trip, and the defaults print as such.
    EXPECT_EQ(*applyAllocatorConf({}, toAllocatorConf(*s)), *s);
    EXPECT_EQ(describeAllocatorSettings({}), "defaults");
}

TEST(AllocatorSettings, DivisionsByIntervalAsPytorchReadsThem) {
    auto s = applyAllocatorConf({}, "roundup_power2_divisions:[256:1,512:2,>:4]");
    ASSERT_TRUE(s.ok()) << s.message();
    const auto& d = s->roundup_power2_divisions;
    EXPECT_EQ(d[0], 1u);  // below 256 MB: the first entry fills the intervals before it
    EXPECT_EQ(d[7], 1u);  // [128, 256) MB
    EXPECT_EQ(d[8], 1u);  // 256 MB
    EXPECT_EQ(d[9], 2u);  // 512 MB
    EXPECT_EQ(d[10], 4u);
    EXPECT_EQ(d[15], 4u);
}

TEST(AllocatorSettings, RefusesWhatPytorchRefusesWithTheKeyNamed) {
    for (const char* bad :
         {"expandable_segments:maybe", "max_split_size_mb:20", "max_split_size_mb:-3",
          "roundup_power2_divisions:3", "garbage_collection_threshold:1.5", "no_such_key:1",
          "nocolon", "roundup_power2_divisions:[256:1", "max_split_size_mb:99999999999999"}) {
        auto s = applyAllocatorConf({}, bad);
        ASSERT_FALSE(s.ok()) << bad;
        EXPECT_NE(s.message().find(std::string(bad).substr(0, 8)), std::string::npos)
            << s.message();
    }
    // Keys that do not move blocks are accepted.
    EXPECT_TRUE(applyAllocatorConf({}, "backend:native,release_lock_on_cudamalloc:True").ok());
}

TEST(AllocatorSettings, ReadsWhatSnapshotsRecord) {
    Trace t;
    EXPECT_EQ(allocatorSettingsOf(t).source, AllocatorSettingsSource::Defaults);
    t.metadata.setProperty("allocator_settings.max_split_size", "-1");
    t.metadata.setProperty("allocator_settings.expandable_segments", "true");
    t.metadata.setProperty("allocator_settings.garbage_collection_threshold", "0.0");
    t.metadata.setProperty("allocator_settings.roundup_power2_divisions",
                           "{\"1\": 0, \"2\": 8, \"4\": 0}");
    const auto r = allocatorSettingsOf(t);
    EXPECT_EQ(r.source, AllocatorSettingsSource::Recorded);
    EXPECT_TRUE(r.settings.expandable_segments);
    EXPECT_EQ(r.settings.max_split_size, AllocatorSettings::kNoMaxSplit);
    EXPECT_EQ(r.settings.roundup_power2_divisions[1], 8u);
    EXPECT_EQ(r.settings.garbage_collection_threshold, 0.0);

    Trace only_conf;  // older snapshots: the variable alone
    only_conf.metadata.setProperty("allocator_settings.PYTORCH_CUDA_ALLOC_CONF",
                                   "\"max_split_size_mb:128\"");
    EXPECT_EQ(allocatorSettingsOf(only_conf).settings.max_split_size, 128 * MiB);

    Trace hostile;  // values PyTorch would not hold are left at the defaults
    hostile.metadata.setProperty("allocator_settings.max_split_size", "5");
    hostile.metadata.setProperty("allocator_settings.garbage_collection_threshold", "nan");
    hostile.metadata.setProperty("allocator_settings.roundup_power2_divisions", "{\"3\": 7}");
    EXPECT_EQ(allocatorSettingsOf(hostile).settings, AllocatorSettings{});
}

TEST(AllocatorSettings, RoundsAsTheAllocatorDoes) {
    const AllocatorSettings defaults;
    EXPECT_EQ(roundAllocationSize(defaults, 1), 512u);
    EXPECT_EQ(roundAllocationSize(defaults, 512), 512u);
    EXPECT_EQ(roundAllocationSize(defaults, 513), 1024u);
    EXPECT_EQ(roundAllocationSize(defaults, 1300000), 1300480u);
    AllocatorSettings four = *applyAllocatorConf({}, "roundup_power2_divisions:4");
    // 1.24 MiB: between 1 MiB and 2 MiB in quarters of 1 MiB -> 1.25 MiB.
    EXPECT_EQ(roundAllocationSize(four, 1300000), 1310720u);
    EXPECT_EQ(roundAllocationSize(four, 4 * MiB), 4 * MiB);  // a power of two stays
    EXPECT_EQ(roundAllocationSize(four, 1000), 1024u);       // small: 512 B steps only
    EXPECT_EQ(roundAllocationSize(four, UINT64_MAX) % 512, 0u);
}

}  // namespace
}  // namespace memscope
