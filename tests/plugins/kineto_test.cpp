// The kineto fixture loads with every [memory] event, and bad JSON fails cleanly.
#include <gtest/gtest.h>
#include <zlib.h>

#include <random>

#include "memscope/plugins/kineto.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "test_util.h"

namespace memscope {
namespace {

const auto kFixture = [] { return test::fixtures() / "profiler" / "hta_kineto_trace_with_memory_events.json.gz"; };

Result<Trace> fromText(const std::string& s) { return kineto::importBytes(std::as_bytes(std::span(s))); }

TEST(Kineto, FixtureLoadsAllMemoryEvents) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto t = kineto::importFile(kFixture().string());
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_EQ(t->events.size(), 28010u);
    EXPECT_EQ(t->metadata.rank, 1);
    EXPECT_EQ(t->metadata.pid, 783658);
    EXPECT_EQ(t->metadata.time_base, TimeBase::Nanoseconds);
    const auto s = test::summaryOf(*t);
    ASSERT_EQ(s.devices.size(), 2u);  // the CPU (-1) and GPU 1
    EXPECT_EQ(s.devices.at(1).trace_entries, 26770u);
    EXPECT_EQ(s.devices.at(-1).trace_entries, 1240u);
    EXPECT_EQ(s.devices.at(1).alloc_count, 13385u);
    EXPECT_EQ(s.devices.at(1).free_completed_count, 13385u);
    // The first memory event: {"Device Id": 1, "Addr": 139926520725504, "Bytes": 5242880}
    const Event* first = nullptr;
    for (const Event& e : t->events)
        if (e.device == 1) { first = &e; break; }
    ASSERT_TRUE(first);
    EXPECT_EQ(first->address, 139926520725504u);
    EXPECT_EQ(first->size, 5242880u);
    EXPECT_EQ(first->time, 1669783687464300000);
}

TEST(Kineto, ExportToSnapshotAndBackKeepsTheSummary) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto t = kineto::importFile(kFixture().string());
    ASSERT_TRUE(t.ok()) << t.message();
    const auto out = test::tempPath("kineto.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(*t, out.string()).ok());
    auto back = pytorch_snapshot::importFile(out.string());
    ASSERT_TRUE(back.ok()) << back.message();
    const auto a = test::summaryOf(*t), b = test::summaryOf(*back);
    ASSERT_EQ(a.devices.size(), b.devices.size());
    for (const auto& [d, x] : a.devices) {
        const auto& y = b.devices.at(d);
        EXPECT_EQ(x.peak_active_bytes, y.peak_active_bytes) << d;
        EXPECT_EQ(x.peak_event_index, y.peak_event_index) << d;
        EXPECT_EQ(x.trace_entries, y.trace_entries) << d;
        EXPECT_EQ(x.final_active_bytes, y.final_active_bytes) << d;
        EXPECT_EQ(x.reserved_bytes, y.reserved_bytes) << d;
        EXPECT_EQ(x.first_time_us, y.first_time_us) << d;
        EXPECT_EQ(x.last_time_us, y.last_time_us) << d;
    }
    std::filesystem::remove(out);
}

TEST(Kineto, OldFormatWithoutAddrStillGivesACurve) {
    const std::string json = R"({"traceEvents": [
      {"ph": "i", "name": "[memory]", "ts": 10.5, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 100}},
      {"ph": "i", "name": "[memory]", "ts": 11, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 50}},
      {"ph": "X", "name": "aten::add", "ts": 11.5, "dur": 3},
      {"ph": "i", "name": "[memory]", "ts": 12, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -100}},
      {"ph": "i", "name": "[memory]", "ts": 13, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -50}}]})";
    auto t = fromText(json);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 4u);
    EXPECT_EQ(t->events[0].time, 10500);
    const auto s = test::summaryOf(*t);
    EXPECT_EQ(s.devices.at(0).peak_active_bytes, 150);
    EXPECT_EQ(*s.devices.at(0).final_active_bytes, 0u);
}

TEST(Kineto, ArrayFormAndGzipInMemory) {
    const std::string json = R"([{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Device Type": 1, "Device Id": 2, "Addr": 4096, "Bytes": 8}}])";
    std::vector<unsigned char> gz(compressBound(uLong(json.size())) + 64);
    z_stream z{};
    ASSERT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(json.data()));
    z.avail_in = uInt(json.size());
    z.next_out = gz.data();
    z.avail_out = uInt(gz.size());
    ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    gz.resize(z.total_out);
    deflateEnd(&z);
    auto t = kineto::importBytes(std::as_bytes(std::span(gz)));
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->events[0].device, 2);
    EXPECT_EQ(t->events[0].address, 4096u);
    EXPECT_GE(kineto::probe(std::as_bytes(std::span(gz)), "x.json.gz"), 50);
    // truncated gzip
    auto cut = kineto::importBytes(std::as_bytes(std::span(gz)).first(gz.size() / 2));
    EXPECT_FALSE(cut.ok());
}

TEST(Kineto, BadInputFailsCleanly) {
    const std::string cases[] = {
        "", "{", "[", "{\"traceEvents\": [", "{\"traceEvents\": [{\"name\": \"[memory]\", \"args\": {\"Bytes\": }}]}",
        std::string(100000, '['), "\x1f\x8b garbage", "{\"traceEvents\": [{\"name\": \"[memory]\", \"args\": {\"Device Type\": 1, \"Device Id\": 99999, \"Bytes\": 1}}]}",
    };
    for (const auto& c : cases) {
        auto t = fromText(c);
        EXPECT_FALSE(t.ok()) << c.substr(0, 40);
    }
}

TEST(Kineto, TruncatedAndFlippedFixtureNeverCrashes) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto bytes = test::readBytes(kFixture());
    ASSERT_FALSE(bytes.empty());
    const std::span<const std::byte> all(bytes);
    for (size_t n = 0; n < bytes.size(); n += bytes.size() / 10 + 1) {
        auto t = kineto::importBytes(all.first(n));
        EXPECT_FALSE(t.ok()) << n;
    }
    std::mt19937 rng(7);
    auto head = std::vector<std::byte>(bytes.begin(), bytes.begin() + 20000);
    for (int i = 0; i < 200; ++i) {
        auto copy = head;
        copy[rng() % copy.size()] ^= std::byte(1u << (rng() % 8));
        (void)kineto::importBytes(copy);
    }
}

}  // namespace
}  // namespace memscope
