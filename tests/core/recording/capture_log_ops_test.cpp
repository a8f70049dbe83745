// The capture log's typed records (capture_log.h): the ops that made the
// allocations, written here byte by byte from the documented layout, and by
// the capture library's own writer; logs without them read as before, and
// damaged ones never make an op out of a wrong name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../scratch_dir_test.h"
#include "capture_log_writer.h"
#include "memscope/model/op_scopes.h"
#include "memscope/recording/capture_log.h"

namespace memscope {
namespace {

template <typename T>
void put(std::string& out, T value) {
    const auto u = static_cast<std::make_unsigned_t<T>>(value);
    for (size_t i = 0; i < sizeof(T); ++i) out += char((u >> (8 * i)) & 0xff);
}

std::string header() {
    std::string out("MSCPUEV1", 8);
    put<uint32_t>(out, 24);
    put<uint32_t>(out, 0);
    return out;
}

std::string alloc(int64_t time, uint64_t address, int64_t bytes) {
    std::string out;
    put(out, time);
    put(out, address);
    put(out, bytes);
    return out;
}

std::string typed(std::string first16, uint32_t a, uint16_t b, uint8_t kind) {
    first16.resize(16, '\0');
    std::string out = first16;
    put(out, a);
    put(out, b);
    out += char(kind);
    out += char(0x80);
    return out;
}

std::string opScope(int64_t start, int64_t end, uint32_t name, uint16_t depth) {
    std::string first;
    put(first, start);
    put(first, end);
    return typed(first, name, depth, 1);
}

// A name record and the text records its length needs.
std::string opName(uint32_t id, const std::string& name) {
    std::string out = typed(name.substr(0, 16), id, uint16_t(name.size()), 2);
    for (size_t at = 16; at < name.size(); at += 16) out += typed(name.substr(at, 16), 0, 0, 3);
    return out;
}

class CaptureLogOpsTest : public testutil::ScratchDirTest {
protected:
    std::vector<LoadWarning> warnings_;
    TaskContext ctx() { return TaskContext{{}, nullptr, &warnings_}; }
};

TEST_F(CaptureLogOpsTest, OpRecordsBetweenAllocationsReadAsOps) {
    const std::string long_name = "aten::_scaled_dot_product_efficient_attention";  // 3 records
    const std::string path =
        write("cpu-events.bin", header() + opName(1, "aten::addmm") + alloc(110, 0x1000, 4096) +
                                    opScope(100, 200, 1, 0) + opName(7, long_name) +
                                    alloc(310, 0x2000, 64) + opScope(300, 400, 7, 2000) +
                                    alloc(500, 0x1000, -4096));
    auto r = readCaptureLogWithOps(path, ctx());
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->allocations.size(), 3u);
    EXPECT_EQ(r->allocations[1].address, 0x2000u);
    EXPECT_EQ(r->allocations[2].bytes, -4096);
    EXPECT_EQ(r->ops.bad, 0u);
    ASSERT_EQ(r->ops.names.size(), 2u);
    EXPECT_EQ(r->ops.names.at(1), "aten::addmm");
    EXPECT_EQ(r->ops.names.at(7), long_name);
    ASSERT_EQ(r->ops.scopes.size(), 2u);
    EXPECT_EQ(r->ops.scopes[0].start, 100);
    EXPECT_EQ(r->ops.scopes[0].end, 200);
    EXPECT_EQ(r->ops.scopes[0].name, 1u);
    EXPECT_EQ(r->ops.scopes[1].name, 7u);
    EXPECT_EQ(r->ops.scopes[1].depth, kMaxOpDepth);  // clamped
    // The allocations-only reader sees the same allocations.
    auto old = readCaptureLog(path, ctx());
    ASSERT_TRUE(old.ok()) << old.message();
    EXPECT_EQ(old->size(), 3u);
    EXPECT_TRUE(warnings_.empty());
}

TEST_F(CaptureLogOpsTest, ALogWithoutOpRecordsReadsAsBefore) {
    // Frees of any size a real allocator makes are never typed records.
    const std::string path = write("old.bin", header() + alloc(1, 0x10, 8) + alloc(2, 0x10, -8) +
                                                  alloc(3, 0x20, -(int64_t(1) << 61)));
    auto r = readCaptureLogWithOps(path, ctx());
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->allocations.size(), 3u);
    EXPECT_TRUE(r->ops.empty());
    EXPECT_TRUE(r->ops.names.empty());
    EXPECT_EQ(r->ops.bad, 0u);
}

TEST_F(CaptureLogOpsTest, DamagedOpRecordsAreCountedNeverMisnamed) {
    struct Case {
        const char* what;
        std::string records;
        size_t scopes, bad;
    };
    const std::string long_name(40, 'x');
    std::string cut_name = opName(2, long_name);
    cut_name.resize(2 * 24);  // its last text record missing, an allocation instead
    const std::vector<Case> cases = {
        {"a scope before its name", opScope(1, 2, 1, 0) + opName(1, "aten::mm"), 0, 1},
        {"a name cut by another record", cut_name + alloc(5, 0x10, 8) + opScope(1, 2, 2, 0), 0, 2},
        {"a name cut by the end of the log", opName(1, "aten::mm") + cut_name, 0, 1},
        {"text with no name before it", typed("stray", 0, 0, 3), 0, 1},
        {"a name longer than the bound",
         typed("aten", 3, kMaxCaptureOpName + 1, 2) + opScope(1, 2, 3, 0), 0, 2},
        {"a scope that ends before it starts", opName(1, "aten::mm") + opScope(9, 2, 1, 0), 0, 1},
        {"a kind from a newer writer",
         opName(1, "aten::mm") + typed("", 0, 0, 77) + opScope(1, 2, 1, 0), 1, 0},
        {"an id named twice keeps the first",
         opName(1, "aten::mm") + opName(1, "aten::bmm") + opScope(1, 2, 1, 0), 1, 0},
    };
    for (const Case& c : cases) {
        const std::string path = write("damaged.bin", header() + c.records);
        auto r = readCaptureLogWithOps(path, ctx());
        ASSERT_TRUE(r.ok()) << c.what << ": " << r.message();
        EXPECT_EQ(r->ops.scopes.size(), c.scopes) << c.what;
        EXPECT_EQ(r->ops.bad, c.bad) << c.what;
        for (const CapturedOp& op : r->ops.scopes) {
            ASSERT_TRUE(r->ops.names.contains(op.name)) << c.what;
            EXPECT_EQ(r->ops.names.at(op.name), "aten::mm") << c.what;
        }
    }
}

TEST_F(CaptureLogOpsTest, TheCaptureLibrarysWriterReadsBack) {
    const std::string file = path("written.bin");
    torch_capture::CaptureLogWriter w;
    ASSERT_TRUE(w.open(file));
    const std::string long_name(kMaxCaptureOpName + 50, 'n');  // cut to the bound
    w.append(10, 0x1000, 4096);
    w.appendOp(5, 20, "aten::addmm", 1);
    w.appendOp(30, 40, "aten::addmm", 0);  // named once
    w.appendOp(50, 60, long_name, 3);
    w.append(70, 0x1000, -4096);
    ASSERT_TRUE(w.close());

    auto r = readCaptureLogWithOps(file, ctx());
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->allocations.size(), 2u);
    EXPECT_EQ(r->allocations[1].bytes, -4096);
    EXPECT_EQ(r->ops.bad, 0u);
    ASSERT_EQ(r->ops.names.size(), 2u);
    ASSERT_EQ(r->ops.scopes.size(), 3u);
    EXPECT_EQ(r->ops.names.at(r->ops.scopes[0].name), "aten::addmm");
    EXPECT_EQ(r->ops.scopes[1].name, r->ops.scopes[0].name);
    EXPECT_EQ(r->ops.scopes[0].depth, 1);
    EXPECT_EQ(r->ops.scopes[1].start, 30);
    EXPECT_EQ(r->ops.names.at(r->ops.scopes[2].name), long_name.substr(0, kMaxCaptureOpName));
    EXPECT_EQ(r->ops.scopes[2].depth, 3);
}

}  // namespace
}  // namespace memscope
