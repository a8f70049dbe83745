// A snapshot's 'device_traces' lists devices that have no entries too (a run
// on 4 GPUs that recorded nothing yet, or only on some): the export must write
// as many lists, or memory_viz offers fewer devices than the run had.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "memscope/plugins/pytorch_snapshot.h"
#include "pickle_writer.h"
#include "snapshot_prologue.h"
#include "snapshot_shape.h"
#include "test_util.h"

namespace memscope {
namespace {

namespace ps = pytorch_snapshot;

// {'segments': [], 'device_traces': [[], [], ...]} with `devices` empty lists
// and, if `entry_on` >= 0, one alloc entry on that device.
std::filesystem::path writeSnapshot(const std::string& name, int devices, int entry_on = -1) {
    const auto path = test::tempPath(name);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    pickle::Writer w(f);
    test::beginDeviceTraces(w);
    for (int d = 0; d < devices; ++d) {
        w.emptyList();
        if (d == entry_on) {
            w.mark();
            w.emptyDict();
            w.mark();
            w.string("action");
            w.string("alloc");
            w.string("addr");
            w.integer(4096);
            w.string("size");
            w.integer(512);
            w.setItems();
            w.appends();
        }
    }
    if (devices > 0) w.appends();
    w.setItems();
    w.end();
    EXPECT_TRUE(w.status().ok());
    std::fclose(f);
    return path;
}

size_t exportedLists(const Trace& trace, const std::string& name) {
    const auto out = test::tempPath(name);
    auto written = ps::exportFile(trace, out.string());
    EXPECT_TRUE(written.ok()) << written.message();
    auto shape = test::readShape(out);
    EXPECT_TRUE(shape.ok()) << shape.message();
    std::filesystem::remove(out);
    return shape.ok() ? shape->device_traces.size() : 0;
}

TEST(SnapshotDevices, EmptyDeviceTracesSurviveTheRoundTrip) {
    const auto in = writeSnapshot("four-empty.pickle", 4);
    ASSERT_EQ(test::readShape(in)->device_traces.size(), 4u);
    auto t = ps::importFile(in.string());
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_TRUE(t->events.empty());
    ASSERT_TRUE(t->metadata.property(ps::kDeviceCountKey));
    EXPECT_EQ(*t->metadata.property(ps::kDeviceCountKey), "4");

    // export -> re-import -> export: 4 lists each time.
    const auto out = test::tempPath("four-empty-out.pickle");
    ASSERT_TRUE(ps::exportFile(*t, out.string()).ok());
    auto shape = test::readShape(out);
    ASSERT_TRUE(shape.ok()) << shape.message();
    EXPECT_EQ(shape->device_traces, (std::vector<size_t>{0, 0, 0, 0}));
    auto back = ps::importFile(out.string());
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_EQ(*back->metadata.property(ps::kDeviceCountKey), "4");
    EXPECT_EQ(exportedLists(*back, "four-empty-again.pickle"), 4u);
    std::filesystem::remove(in);
    std::filesystem::remove(out);
}

TEST(SnapshotDevices, EntriesOnOneOfFourDevicesKeepAllFour) {
    const auto in = writeSnapshot("one-of-four.pickle", 4, 1);
    auto t = ps::importFile(in.string());
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->events[0].device, 1);
    const auto out = test::tempPath("one-of-four-out.pickle");
    ASSERT_TRUE(ps::exportFile(*t, out.string()).ok());
    auto shape = test::readShape(out);
    ASSERT_TRUE(shape.ok()) << shape.message();
    EXPECT_EQ(shape->device_traces, (std::vector<size_t>{0, 1, 0, 0}));
    std::filesystem::remove(in);
    std::filesystem::remove(out);
}

TEST(SnapshotDevices, ABadCountPropertyIsIgnored) {
    // A trace from elsewhere (or a native file edited by hand) may carry any
    // text there: only a plain positive number counts, capped at the ordinals.
    Trace t;
    Event e;
    e.kind = EventKind::Alloc;
    e.address = 4096;
    e.size = 8;
    e.device = 1;
    t.events.push_back(e);
    for (const char* bad : {"", "x", "-3", "0", "2x", "99999999999"}) {
        t.metadata.setProperty(std::string(ps::kDeviceCountKey), bad);
        EXPECT_EQ(exportedLists(t, "bad-count.pickle"), 2u) << "'" << bad << "'";
    }
    t.metadata.setProperty(std::string(ps::kDeviceCountKey), "6");
    EXPECT_EQ(exportedLists(t, "count-6.pickle"), 6u);
}

}  // namespace
}  // namespace memscope
