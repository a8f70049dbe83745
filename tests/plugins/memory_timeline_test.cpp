// torch.profiler memory-timeline exports (written here in both shapes, since
// no fixture exists): categories and curves come out as torch computes them.
#include "memscope/plugins/memory_timeline.h"

#include <gtest/gtest.h>

#include "memscope/plugins/pytorch_snapshot.h"
#include "test_util.h"

namespace memscope {
namespace {

Result<Trace> fromText(const std::string& s) {
    return memory_timeline::importBytes(std::as_bytes(std::span(s)));
}

TEST(MemoryTimeline, RawEventsBecomeCategorizedAllocations) {
    // A parameter that predates profiling, an activation created and destroyed,
    // and a temporary whose version change turns it into a gradient.
    const std::string raw = R"([[-1, 1, 1000, 0],
        [5000, 2, 200, 4], [6000, 2, 300, 3],
        [7000, 3, -300, 3], [7000, 3, 300, 5],
        [8000, 4, -200, 4]])";
    auto t = fromText(raw);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 6u);
    EXPECT_EQ(t->events[0].time, 5000);  // predates: placed at the first time
    EXPECT_EQ(t->events[0].category, Category::Parameter);
    EXPECT_EQ(t->events[3].kind, EventKind::FreeCompleted);
    EXPECT_EQ(t->events[3].address, t->events[2].address);
    const auto s = test::summaryOf(*t);
    const auto& d = s.devices.at(0);
    EXPECT_EQ(d.peak_active_bytes, 1500);
    EXPECT_EQ(d.categories_at_peak[index(Category::Parameter)], 1000);
    EXPECT_EQ(d.categories_at_peak[index(Category::Activation)], 200);
    EXPECT_EQ(d.categories_at_peak[index(Category::Temporary)], 300);
    EXPECT_EQ(*d.final_active_bytes, 1300u);
    EXPECT_GE(memory_timeline::probe(std::as_bytes(std::span(raw)), "x.raw.json.gz"), 90);
}

TEST(MemoryTimeline, RawFreesPairWithTheNewestLiveAllocationOfTheirSize) {
    // A free takes the newest live allocation of its size and category; with
    // none (never one, or freed by an earlier split), it frees the newest
    // allocations of its category, splitting the last.
    const std::string raw = R"([[1, 2, 100, 3], [2, 2, 200, 3], [3, 2, 100, 3], [4, 2, 50, 3],
        [5, 4, -100, 3], [6, 4, -70, 3], [7, 4, -200, 3], [8, 4, -80, 3]])";
    auto t = fromText(raw);
    ASSERT_TRUE(t.ok()) << t.message();
    struct Want {
        EventKind kind;
        size_t same_address_as;  // SIZE_MAX: a new address
        uint64_t size;
    };
    constexpr EventKind A = EventKind::Alloc, F = EventKind::FreeCompleted;
    const std::vector<Want> want = {
        {A, SIZE_MAX, 100}, {A, SIZE_MAX, 200}, {A, SIZE_MAX, 100},
        {A, SIZE_MAX, 50},  {F, 2, 100},                             // the newest 100
        {F, 3, 50},         {F, 1, 200},        {A, SIZE_MAX, 180},  // 70: split
        {F, 7, 180},        {F, 0, 100},        {A, SIZE_MAX, 80},  // the 200 is gone: 200 of bytes
        {F, 10, 80},  // the split remainder, by its exact size
    };
    ASSERT_EQ(t->events.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        const Event& e = t->events[i];
        EXPECT_EQ(e.kind, want[i].kind) << i;
        EXPECT_EQ(e.size, want[i].size) << i;
        EXPECT_EQ(e.category, Category(3)) << i;
        if (want[i].same_address_as != SIZE_MAX)
            EXPECT_EQ(e.address, t->events[want[i].same_address_as].address) << i;
        else
            for (size_t j = 0; j < i; ++j) EXPECT_NE(e.address, t->events[j].address) << i;
    }
}

TEST(MemoryTimeline, CoalescedCurveKeepsEveryCategoryTotal) {
    // [times_us, sizes]; sizes[i][0] is a plot baseline, [1 + category] the bytes.
    const std::string json = R"([[10, 20, 30],
        [[0, 100, 0, 0, 0, 50, 0, 0, 0],
         [0, 100, 0, 0, 30, 80, 0, 0, 0],
         [0, 100, 0, 0, 0, 20, 0, 0, 0]]])";
    auto t = fromText(json);
    ASSERT_TRUE(t.ok()) << t.message();
    const auto s = test::summaryOf(*t);
    const auto& d = s.devices.at(0);
    EXPECT_EQ(d.peak_active_bytes, 210);
    EXPECT_EQ(d.categories_at_peak[index(Category::Parameter)], 100);
    EXPECT_EQ(d.categories_at_peak[index(Category::Activation)], 80);
    EXPECT_EQ(d.categories_at_peak[index(Category::Temporary)], 30);
    EXPECT_EQ(*d.final_active_bytes, 120u);
    EXPECT_EQ(*d.first_time_us, 10);
}

TEST(MemoryTimeline, ExportsToASnapshotWithCategories) {
    auto t = fromText("[[1000, 2, 64, 4], [2000, 2, 32, 0], [3000, 4, -64, 4]]");
    ASSERT_TRUE(t.ok()) << t.message();
    const auto out = test::tempPath("timeline.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(*t, out.string()).ok());
    auto back = pytorch_snapshot::importFile(out.string());
    ASSERT_TRUE(back.ok()) << back.message();
    const auto a = test::summaryOf(*t).devices.at(0);
    const auto b = test::summaryOf(*back).devices.at(0);
    EXPECT_EQ(a.peak_active_bytes, b.peak_active_bytes);
    EXPECT_EQ(a.final_active_bytes, b.final_active_bytes);
    std::filesystem::remove(out);
}

TEST(MemoryTimeline, BadInputFailsCleanly) {
    const std::string cases[] = {"",
                                 "[",
                                 "[[1, 2, 3]]",
                                 "[[1, 9, 3, 0]]",
                                 "{\"a\": 1}",
                                 "[[\"x\", 1, 2, 3]]",
                                 "[[[[[1]]]]]",
                                 "[[1,2],[[0,1],[0,2],[0,3]]]",
                                 std::string(50000, '[')};
    for (const auto& c : cases) EXPECT_FALSE(fromText(c).ok()) << c.substr(0, 30);
}

}  // namespace
}  // namespace memscope
