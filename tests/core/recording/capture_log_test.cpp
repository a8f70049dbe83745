// readCaptureLog: the CPU allocation log, written here byte by byte from the
// layout capture_log.h documents (16-byte header, 24-byte records).
#include "memscope/recording/capture_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../scratch_dir_test.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

template <typename T>
void appendLittleEndian(std::string& out, T value) {
    const auto u = static_cast<std::make_unsigned_t<T>>(value);
    for (size_t i = 0; i < sizeof(T); ++i) out += char((u >> (8 * i)) & 0xff);
}

std::string header(uint32_t record_size = 24, const char* magic = "MSCPUEV1") {
    std::string out(magic, 8);
    appendLittleEndian<uint32_t>(out, record_size);
    appendLittleEndian<uint32_t>(out, 0);
    return out;
}

std::string record(int64_t time, uint64_t address, int64_t bytes) {
    std::string out;
    appendLittleEndian(out, time);
    appendLittleEndian(out, address);
    appendLittleEndian(out, bytes);
    return out;
}

// A folder of its own per test, removed at the end.
class CaptureLogTest : public testutil::ScratchDirTest {
protected:
    std::vector<LoadWarning> warnings_;
    TaskContext ctx() { return TaskContext{{}, nullptr, &warnings_}; }
};

TEST_F(CaptureLogTest, TheHeaderMatchesTheDocumentedLayout) {
    EXPECT_EQ(std::string(kCaptureLogMagic, 8), "MSCPUEV1");
    EXPECT_EQ(kCaptureLogHeaderSize, 16u);
    EXPECT_EQ(kCaptureLogRecordSize, 24u);
}

TEST_F(CaptureLogTest, ReadsAllocationsAndFreesInOrder) {
    const int64_t t0 = 1733000000123456789;
    const std::string path = write("cpu-events.bin", header() + record(t0, 0x7f0000001000, 4096) +
                                                         record(t0 + 5, 0xffffffffffffff00ull, 1) +
                                                         record(t0 + 9, 0x7f0000001000, -4096));
    auto r = readCaptureLog(path, ctx());
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0].time, t0);
    EXPECT_EQ((*r)[0].address, 0x7f0000001000u);
    EXPECT_EQ((*r)[0].bytes, 4096);
    EXPECT_EQ((*r)[1].time, t0 + 5);
    EXPECT_EQ((*r)[1].address, 0xffffffffffffff00ull);
    EXPECT_EQ((*r)[1].bytes, 1);
    EXPECT_EQ((*r)[2].bytes, -4096);  // the free of 4096 bytes
    EXPECT_TRUE(warnings_.empty());
}

TEST_F(CaptureLogTest, AHeaderWithoutRecordsIsAnEmptyLog) {
    auto r = readCaptureLog(write("cpu-events.bin", header()), ctx());
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_TRUE(r->empty());
    EXPECT_TRUE(warnings_.empty());
}

TEST_F(CaptureLogTest, ManyRecordsAcrossReadBuffersAreAllRead) {
    // More than one internal read of 65,536 records.
    constexpr int64_t kCount = 150'000;
    std::string bytes = header();
    bytes.reserve(bytes.size() + kCount * 24 + 7);
    for (int64_t i = 0; i < kCount; ++i)
        bytes += record(1000 + i, uint64_t(0x1000 + 64 * i), i % 2 == 0 ? 64 : -64);
    bytes += std::string(7, '\x01');  // and a cut record after them
    std::vector<uint64_t> progress;
    TaskContext c = ctx();
    c.progress = [&](uint64_t done, uint64_t) { progress.push_back(done); };
    auto r = readCaptureLog(write("big.bin", bytes), c);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->size(), size_t(kCount));
    for (int64_t i = 0; i < kCount; ++i) {
        const CapturedAllocation& a = (*r)[size_t(i)];
        ASSERT_EQ(a.time, 1000 + i) << i;
        ASSERT_EQ(a.address, uint64_t(0x1000 + 64 * i)) << i;
        ASSERT_EQ(a.bytes, i % 2 == 0 ? 64 : -64) << i;
    }
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.back(), uint64_t(kCount) * 24);
    ASSERT_EQ(warnings_.size(), 1u);
    EXPECT_EQ(warnings_[0].kind, WarningKind::DamagedTail);
}

TEST_F(CaptureLogTest, ACutLastRecordIsDroppedWithAWarning) {
    const std::string full = header() + record(10, 0x100, 32) + record(20, 0x200, 48);
    for (size_t keep : {size_t(1), size_t(8), size_t(23)}) {
        SCOPED_TRACE(keep);
        warnings_.clear();
        const std::string path = write("cut.bin", full.substr(0, 16 + 24 + keep));
        auto r = readCaptureLog(path, ctx());
        ASSERT_TRUE(r.ok()) << r.message();
        ASSERT_EQ(r->size(), 1u);
        EXPECT_EQ((*r)[0].time, 10);
        EXPECT_EQ((*r)[0].bytes, 32);
        ASSERT_EQ(warnings_.size(), 1u);
        EXPECT_EQ(warnings_[0].kind, WarningKind::DamagedTail);
        EXPECT_EQ(warnings_[0].count, 1u);
        EXPECT_NE(warnings_[0].message.find(path), std::string::npos) << warnings_[0].message;
        EXPECT_NE(warnings_[0].message.find("cut short"), std::string::npos);
    }
}

TEST_F(CaptureLogTest, ABadHeaderIsAnErrorNamingTheFile) {
    const std::string records = record(10, 0x100, 32);
    for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
             {"empty.bin", ""},
             {"short.bin", header().substr(0, 15)},
             {"magic.bin", header(24, "MSCPUEV2") + records},
             {"garbage.bin", std::string(64, '\xab')},
             {"json.bin", "{\"format\": \"memscope-hook\", \"version\": 1}"}}) {
        SCOPED_TRACE(name);
        const std::string path = write(name, bytes);
        auto r = readCaptureLog(path, ctx());
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.message(), path + ": not a memscope CPU allocation log (bad header)");
    }
}

TEST_F(CaptureLogTest, AnUnknownRecordSizeIsAnError) {
    const std::string path = write("wide.bin", header(32) + std::string(64, '\0'));
    auto r = readCaptureLog(path, ctx());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), path + ": CPU allocation log with an unknown record size");
}

TEST_F(CaptureLogTest, AMissingFileIsAnErrorNamingIt) {
    const std::string path = (dir_ / "absent.bin").string();
    auto r = readCaptureLog(path, ctx());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(),
              path + ": cannot open the CPU allocation log (No such file or directory)");
}

TEST_F(CaptureLogTest, ACancelledReadStops) {
    std::atomic<bool> cancel{true};
    TaskContext c = ctx();
    c.cancel = &cancel;
    auto r = readCaptureLog(write("cpu-events.bin", header() + record(1, 2, 3)), c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), "cancelled");
}

}  // namespace
}  // namespace memscope
