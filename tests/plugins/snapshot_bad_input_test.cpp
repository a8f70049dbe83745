// Hostile and broken pickles: every one must give a clear error, never a crash,
// a hang or a huge allocation (these tests also run under ASan/UBSan).
#include <gtest/gtest.h>

#include <random>

#include "memscope/plugins/pytorch_snapshot.h"
#include "memscope/timeline/timeline.h"
#include "test_util.h"

namespace memscope {
namespace {

// Builds pickle bytes by hand, opcode by opcode.
struct P {
    std::vector<std::byte> b;
    P& op(uint8_t o) {
        b.push_back(std::byte(o));
        return *this;
    }
    P& u8(uint8_t v) { return op(v); }
    P& le(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) op(uint8_t(v >> (8 * i)));
        return *this;
    }
    P& str(std::string_view s) {
        op(0x8c).u8(uint8_t(s.size()));
        for (char c : s) op(uint8_t(c));
        return *this;
    }
    P& i1(uint8_t v) { return op('K').u8(v); }
    P& proto() { return op(0x80).u8(4); }
};

Result<Trace> load(const P& p) {
    return pytorch_snapshot::importBytes(p.b);
}

// {'segments': [], 'device_traces': [[ENTRY]]} with ENTRY written by `entry`.
template <typename F>
P withEntry(F entry) {
    P p;
    p.proto()
        .op('}')
        .op('(')
        .str("segments")
        .op(']')
        .str("device_traces")
        .op(']')
        .op(']')
        .op('}')
        .op('(');
    entry(p);
    p.op('u').op('a').op('a').op('u').op('.');
    return p;
}

TEST(SnapshotBadInput, MinimalSnapshotLoads) {
    auto t = load(
        withEntry([](P& p) { p.str("action").str("alloc").str("addr").i1(16).str("size").i1(8); }));
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->events[0].address, 16u);
    EXPECT_EQ(t->events[0].size, 8u);
    EXPECT_EQ(t->metadata.time_base, TimeBase::EventIndex);
}

TEST(SnapshotBadInput, NegativeCppPicklerAddressesMapBack) {
    // LONG1 of 8 bytes, 0xffff...f0 = -16 as the C++ pickler writes pointers >= 2^63.
    auto t = load(withEntry([](P& p) {
        p.str("action")
            .str("alloc")
            .str("addr")
            .op(0x8a)
            .u8(8)
            .le(0xfffffffffffffff0ull, 8)
            .str("size")
            .i1(8);
    }));
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_EQ(t->events[0].address, 0xfffffffffffffff0ull);
    // and CPython's 9-byte form of the same pointer
    auto u = load(withEntry([](P& p) {
        p.str("action")
            .str("alloc")
            .str("addr")
            .op(0x8a)
            .u8(9)
            .le(0xfffffffffffffff0ull, 8)
            .u8(0)
            .str("size")
            .i1(8);
    }));
    ASSERT_TRUE(u.ok()) << u.message();
    EXPECT_EQ(u->events[0].address, 0xfffffffffffffff0ull);
}

TEST(SnapshotBadInput, FramesSharedThroughTheMemoAndListsGrownInSeveralBatches) {
    P p;
    p.proto().op('}').op('(').str("segments").op(']').str("device_traces").op(']').op(']').op('(');
    // entry 1: a frames list with one frame dict, stored in memo slot 200
    p.op('}').op('(').str("action").str("alloc").str("size").i1(8).str("frames").op(']');
    p.op('}')
        .op('q')
        .u8(200)
        .op('(')
        .str("filename")
        .str("f.py")
        .str("name")
        .str("fn")
        .str("line")
        .i1(7)
        .op('u');
    p.op('a').op('u');
    // entry 2: the same frame by memo, in two APPENDS batches (the second one
    // lands on a list the mapper already folded into a stack)
    p.op('}').op('(').str("action").str("alloc").str("size").i1(8).str("frames").op(']');
    p.op('(').op('h').u8(200).op('h').u8(200).op('e').op('(').op('h').u8(200).op('e').op('u');
    p.op('e').op('a').op('u').op('.');
    auto t = load(p);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 2u);
    ASSERT_EQ(t->stack(t->events[0].stack).size(), 1u);
    ASSERT_EQ(t->stack(t->events[1].stack).size(), 3u);
    const Frame& f = t->frame(t->stack(t->events[1].stack)[2]);
    EXPECT_EQ(t->string(f.file), "f.py");
    EXPECT_EQ(t->string(f.function), "fn");
    EXPECT_EQ(f.line, 7u);
}

TEST(SnapshotBadInput, UnknownActionBecomesMarkerWithItsName) {
    auto t = load(withEntry([](P& p) { p.str("action").str("teleport").str("size").i1(0); }));
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->events[0].kind, EventKind::Marker);
    ASSERT_EQ(t->attributes.size(), 1u);
    EXPECT_EQ(t->string(t->attributes[0].value), "teleport");
}

TEST(SnapshotBadInput, LegacyFreePairsWithItsAllocLikeMemoryViz) {
    P p;
    p.proto().op('}').op('(').str("segments").op(']').str("device_traces").op(']').op(']').op('(');
    p.op('}').op('(').str("action").str("alloc").str("addr").i1(16).str("size").i1(8).op('u');
    p.op('}').op('(').str("action").str("free").str("addr").i1(16).str("size").i1(8).op('u');
    p.op('}').op('(').str("action").str("alloc").str("addr").i1(16).str("size").i1(8).op('u');
    p.op('e').op('a').op('u').op('.');
    auto t = load(p);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 3u);
    EXPECT_EQ(t->events[1].kind, EventKind::FreeCompleted);
    ASSERT_EQ(t->attributes.size(), 1u);  // the original action, for the exporter
    EXPECT_EQ(t->string(t->attributes[0].value), "free");
    auto tl = Timeline::build(*t);
    ASSERT_TRUE(tl.ok());
    EXPECT_EQ((*tl)->devices()[0].peak.bytes, 8);  // not 16: the free ended the first alloc
}

TEST(SnapshotBadInput, CodeRunningOpcodesAreRefusedByName) {
    const std::pair<uint8_t, const char*> ops[] = {
        {'c', "GLOBAL"},   {0x93, "STACK_GLOBAL"}, {'R', "REDUCE"},  {'b', "BUILD"},
        {'i', "INST"},     {'o', "OBJ"},           {0x81, "NEWOBJ"}, {0x92, "NEWOBJ_EX"},
        {0x82, "EXT1"},    {0x83, "EXT2"},         {0x84, "EXT4"},   {'P', "PERSID"},
        {'Q', "BINPERSID"}};
    for (auto [op, name] : ops) {
        P p;
        p.proto().str("os").str("system").op(op).u8(0).u8(0).op('.');
        auto t = load(p);
        ASSERT_FALSE(t.ok()) << name;
        EXPECT_NE(t.message().find(name), std::string::npos) << t.message();
        EXPECT_NE(t.message().find("refused"), std::string::npos) << t.message();
        EXPECT_NE(t.message().find("offset 14"), std::string::npos) << t.message();
    }
}

TEST(SnapshotBadInput, HugeDeclaredLengthsFailWithoutAllocating) {
    std::vector<P> cases;
    cases.emplace_back().proto().op(0x8d).le(1ull << 62, 8);          // BINUNICODE8
    cases.emplace_back().proto().op('X').le(0xffffffffu, 4);          // BINUNICODE
    cases.emplace_back().proto().op(0x8e).le(~0ull, 8);               // BINBYTES8
    cases.emplace_back().proto().op(0x8b).le(0x7fffffffu, 4);         // LONG4
    cases.emplace_back().proto().op(0x95).le(1ull << 40, 8);          // FRAME
    cases.emplace_back().proto().op(']').op('r').le(0xfffffff0u, 4);  // LONG_BINPUT
    cases.emplace_back().proto().op('j').le(0xfffffff0u, 4);          // LONG_BINGET
    cases.emplace_back().proto().op('T').le(0x80000000u, 4);          // BINSTRING (negative)
    for (size_t i = 0; i < cases.size(); ++i) {
        auto t = load(cases[i]);
        EXPECT_FALSE(t.ok()) << "case " << i;
    }
}

TEST(SnapshotBadInput, DeepMarksHitTheLimit) {
    P p;
    p.proto();
    for (int i = 0; i < 100000; ++i) p.op('(');
    auto t = load(p);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.message().find("MARK"), std::string::npos) << t.message();
}

TEST(SnapshotBadInput, WrongTypesGiveClearErrors) {
    std::vector<P> cases;
    cases.emplace_back().proto().i1(3).op('.');                                  // int at top
    cases.emplace_back().proto().op('}').str("a").i1(1).op('s').op('.');         // unrelated dict
    cases.emplace_back().proto().op('}').str("segments").i1(1).op('s').op('.');  // segments: int
    cases.emplace_back().proto().op('}').str("device_traces").op('}').op('s').op('.');  // traces:
                                                                                        // dict
    cases.emplace_back().proto().op('}').str("device_traces").op(']').i1(1).op('a').op('s').op('.');
    cases.push_back(withEntry([](P& p) { p.str("action").i1(1); }));  // action: int
    cases.push_back(withEntry([](P& p) { p.str("action").str("alloc").str("size").str("big"); }));
    cases.emplace_back().proto().i1(1).op('a').op('.');                // APPEND to int
    cases.emplace_back().proto().op(']').i1(1).i1(2).op('s').op('.');  // SETITEM on list
    cases.emplace_back().proto().op('u').op('.');                      // no MARK
    cases.emplace_back().proto().op('.');                              // empty STOP
    cases.emplace_back().proto().op('h').u8(5).op('.');                // unset memo
    cases.emplace_back().op(0x80).u8(9).op('.');                       // protocol 9
    cases.emplace_back().proto().op(0xff);                             // unknown op
    cases.emplace_back().proto().op('I').op('1').op('\n').op('.');     // text INT
    for (size_t i = 0; i < cases.size(); ++i) {
        auto t = load(cases[i]);
        ASSERT_FALSE(t.ok()) << "case " << i;
        EXPECT_FALSE(t.message().empty());
    }
}

TEST(SnapshotBadInput, TruncationAtEveryOffsetOfASmallFile) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const auto bytes =
        test::readBytes(test::fixtures() / "snapshots" / "settings_no_trace__DocuBox.pickle");
    ASSERT_FALSE(bytes.empty());
    ASSERT_TRUE(pytorch_snapshot::importBytes(bytes).ok());
    for (size_t n = 0; n < bytes.size(); ++n) {
        auto t = pytorch_snapshot::importBytes(std::span(bytes).first(n));
        ASSERT_FALSE(t.ok()) << "truncated at " << n << " loaded";
    }
}

TEST(SnapshotBadInput, TruncationSampledOnALargerFile) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const auto bytes = test::readBytes(test::fixtures() / "snapshots" /
                                       "legacy_block_history_oom__LLM-inference.pickle");
    ASSERT_FALSE(bytes.empty());
    for (size_t n = 0; n < bytes.size(); n += 61) {
        auto t = pytorch_snapshot::importBytes(std::span(bytes).first(n));
        ASSERT_FALSE(t.ok()) << "truncated at " << n << " loaded";
    }
}

TEST(SnapshotBadInput, BitFlipsNeverCrash) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto bytes =
        test::readBytes(test::fixtures() / "snapshots" / "settings_no_trace__DocuBox.pickle");
    std::mt19937 rng(1234);
    size_t failed = 0;
    for (int i = 0; i < 3000; ++i) {
        auto copy = bytes;
        const int flips = 1 + int(rng() % 4);
        for (int f = 0; f < flips; ++f) copy[rng() % copy.size()] ^= std::byte(1u << (rng() % 8));
        auto t = pytorch_snapshot::importBytes(copy);
        if (!t.ok()) {
            ++failed;
            EXPECT_FALSE(t.message().empty());
        }
    }
    EXPECT_GT(failed, 0u);
}

TEST(SnapshotBadInput, ProbeRecognizesSnapshotsOnly) {
    const std::string json = "{\"traceEvents\": []}";
    EXPECT_EQ(pytorch_snapshot::probe(std::as_bytes(std::span(json)), "x.json"), 0);
    EXPECT_EQ(pytorch_snapshot::probe({}, "x.pickle"), 0);
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const auto bytes =
        test::readBytes(test::fixtures() / "snapshots" / "settings_no_trace__DocuBox.pickle");
    EXPECT_GE(pytorch_snapshot::probe(std::span(bytes).first(64), "x.pickle"), 90);
}

}  // namespace
}  // namespace memscope
