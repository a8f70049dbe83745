// The tracer's path from a CUPTI buffer to the file, without a driver:
// decoder -> WriterSink (phases by time, stacks by correlation id) ->
// BackgroundTraceWriter -> native reader -> Timeline.
#include "writer_sink.h"

#include <cupti.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "activity_decoder.h"
#include "memscope/timeline/timeline.h"

namespace memscope::cupti {
namespace {

namespace fs = std::filesystem;

void putMemory(std::vector<uint8_t>& buffer, CUpti_ActivityMemoryOperationType op, uint64_t address,
               uint64_t bytes, uint64_t time, uint32_t stream, uint32_t correlation) {
    CUpti_ActivityMemory4 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    r.memoryOperationType = op;
    r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r.address = address;
    r.bytes = bytes;
    r.timestamp = time;
    r.streamId = stream;
    r.correlationId = correlation;
    const size_t at = buffer.size();
    buffer.resize(at + sizeof(r));
    std::memcpy(buffer.data() + at, &r, sizeof(r));
}

std::string attributeOf(const Trace& trace, uint64_t event, std::string_view key) {
    for (const EventAttribute& a : trace.attributes)
        if (a.event == event && trace.string(a.key) == key)
            return std::string(trace.string(a.value));
    return "<none>";
}

class WriterSinkTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "memscope-sink-test-XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    fs::path dir_;
};

TEST_F(WriterSinkTest, BufferToFileAndBack) {
    const std::string path = (dir_ / "t.memscope").string();
    TraceMetadata metadata;
    metadata.source_format = "memscope-cupti";
    auto created = BackgroundTraceWriter::create(path, metadata);
    ASSERT_TRUE(created.ok()) << created.message();
    BackgroundTraceWriter& writer = **created;

    // A phase from NVTX, [1000, 2000).
    PhaseIndex phases;
    Phase forward;
    forward.name = writer.internString("forward");
    forward.kind = PhaseKind::Forward;
    forward.start = 1000;
    forward.end = 1000;
    const PhaseId forward_id = writer.addPhase(forward);
    phases.open(forward_id, 1000);
    writer.endPhase(forward_id, 2000);
    phases.close(forward_id, 2000);

    // The stack the allocation callback captured for correlation id 77.
    StackStore stacks;
    stacks.put(77, StackStore::captureHere());

    std::vector<uint8_t> buffer;
    putMemory(buffer, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0xA000, 3 << 20, 1500, 9,
              77);
    putMemory(buffer, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0xB000, 1 << 20, 1600, 9,
              78);
    putMemory(buffer, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0xA000, 3 << 20, 2500, 9, 79);
    WriterSink sink(writer, phases, &stacks);
    const DecodeStats stats = decodeActivityBuffer(buffer.data(), buffer.size(), sink);
    EXPECT_EQ(stats.events, 3u);
    appendDroppedMarker(sink, 2600, 17);
    EXPECT_EQ(stacks.pending(), 0u);  // claimed by the allocation
    ASSERT_TRUE(writer.close().ok());

    auto loaded = readNativeTrace(path);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    const Trace& trace = *loaded;
    ASSERT_EQ(trace.events.size(), 4u);
    const Event& a = trace.events[0];
    EXPECT_EQ(a.kind, EventKind::SegmentAlloc);
    EXPECT_EQ(a.phase, forward_id);
    EXPECT_EQ(trace.streams[a.stream], 9u);
    ASSERT_FALSE(a.stack.isNull());
    bool test_binary_seen = false;
    for (FrameId f : trace.stack(a.stack))
        test_binary_seen |=
            trace.string(trace.frame(f).file).find("memscope_cupti_recorder_test") !=
            std::string_view::npos;
    EXPECT_TRUE(test_binary_seen);
    EXPECT_TRUE(trace.events[1].stack.isNull());  // nothing captured for 78
    EXPECT_EQ(trace.events[2].kind, EventKind::SegmentFree);
    EXPECT_TRUE(trace.events[2].phase.isNull());  // after forward ended
    EXPECT_EQ(trace.events[3].kind, EventKind::Marker);
    EXPECT_EQ(attributeOf(trace, 3, "dropped_records"), "17");

    // Reserved bytes follow the segments: 3 MiB, then 4 MiB, then 1 MiB.
    auto timeline = Timeline::build(trace);
    ASSERT_TRUE(timeline.ok());
    const DeviceTimeline* device = (*timeline)->device(0);
    ASSERT_NE(device, nullptr);
    EXPECT_EQ(device->reserved.valueAt(1550), 3 << 20);
    EXPECT_EQ(device->reserved.valueAt(2000), 4 << 20);
    EXPECT_EQ(device->reserved.valueAt(3000), 1 << 20);
}

}  // namespace
}  // namespace memscope::cupti
