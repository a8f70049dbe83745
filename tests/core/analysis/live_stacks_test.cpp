// The stacks alive at a moment (memscope/analysis/live_stacks.h) and their
// folded text (memscope/report/stacks_report.h): the stacks' bytes add up to
// the live bytes at the peak and at any time, the folded lines parse back.
#include "memscope/analysis/live_stacks.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "../analysis_test_util.h"
#include "memscope/report/stacks_report.h"

namespace memscope {
namespace {

using testutil::ev;

// Three user stacks under train (model.py's forward and loss, one noise frame
// each), allocations with no stack, and one freed before the peak.
struct StackRun {
    Trace trace;
    StackId forward, loss, deep;
};

StackRun stackRun() {
    StackRun r;
    Trace& t = r.trace;
    auto frame = [&](const char* fn, const char* file, uint32_t line) {
        return t.internFrame({t.internString(fn), t.internString(file), line});
    };
    const FrameId alloc = frame(
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::"
        "malloc(int, unsigned long)",
        "CUDACachingAllocator.cpp", 1);
    const FrameId train = frame("train", "/home/me/train.py", 40);
    const FrameId fwd = frame("forward", "/home/me/model.py", 12);
    const FrameId loss = frame("loss;fn", "/home/me/model.py", 30);  // a ';' in its name
    const FrameId attn = frame("attention", "/home/me/model.py", 20);
    const FrameId f1[] = {alloc, fwd, train};  // innermost first
    const FrameId f2[] = {alloc, loss, train};
    const FrameId f3[] = {alloc, attn, fwd, train};
    r.forward = t.internStack(f1);
    r.loss = t.internStack(f2);
    r.deep = t.internStack(f3);
    auto alloc_at = [&](int64_t time, uint64_t address, uint64_t size, StackId s) {
        Event e = ev(time, EventKind::Alloc, address, size);
        e.stack = s;
        t.events.push_back(e);
    };
    alloc_at(10, 0x1000, 1000, r.forward);
    alloc_at(20, 0x2000, 500, r.forward);
    alloc_at(30, 0x3000, 300, r.loss);
    alloc_at(40, 0x4000, 70, {});
    alloc_at(50, 0x5000, 4000, r.deep);
    t.events.push_back(ev(60, EventKind::FreeCompleted, 0x5000, 4000));  // the peak was at 50
    alloc_at(70, 0x6000, 200, r.deep);
    return r;
}

std::map<std::string, int64_t> parseFolded(const std::string& text) {
    std::map<std::string, int64_t> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const size_t space = line.rfind(' ');
        EXPECT_NE(space, std::string::npos) << line;
        if (space == std::string::npos) continue;
        const std::string bytes = line.substr(space + 1);
        EXPECT_EQ(bytes.find_first_not_of("0123456789"), std::string::npos) << line;
        EXPECT_TRUE(out.emplace(line.substr(0, space), std::stoll(bytes)).second)
            << "a stack twice: " << line;
    }
    return out;
}

TEST(LiveStacks, AtThePeakTheStacksAddUpToTheLiveBytes) {
    const StackRun r = stackRun();
    auto tl = Timeline::build(r.trace);
    ASSERT_TRUE(tl.ok());
    auto s = liveStacks(r.trace, **tl, std::nullopt, std::nullopt);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(s->at_peak);
    const DeviceTimeline& d = (*tl)->devices().at(0);
    EXPECT_EQ(s->live_bytes, d.peak.bytes);
    EXPECT_EQ(s->live_bytes, 1000 + 500 + 300 + 70 + 4000);
    int64_t sum = 0;
    for (const LiveStack& st : s->stacks) sum += st.bytes;
    EXPECT_EQ(sum, s->live_bytes);
    ASSERT_EQ(s->stacks.size(), 4u);
    // Root first, noise left out; the largest first.
    EXPECT_EQ(s->stacks[0].frames, (std::vector<std::string>{"train  (/home/me/train.py:40)",
                                                             "forward  (/home/me/model.py:12)",
                                                             "attention  (/home/me/model.py:20)"}));
    EXPECT_EQ(s->stacks[1].bytes, 1500);
    EXPECT_EQ(s->stacks[1].count, 2u);
    EXPECT_EQ(s->stacks.back().frames, std::vector<std::string>{"(no stack)"});

    // The folded text parses back to the same stacks and bytes.
    const auto folded = parseFolded(toFolded(*s));
    ASSERT_EQ(folded.size(), 4u);
    int64_t folded_sum = 0;
    for (const auto& [stack, bytes] : folded) folded_sum += bytes;
    EXPECT_EQ(folded_sum, d.peak.bytes);
    EXPECT_EQ(folded.at("train  (/home/me/train.py:40);forward  (/home/me/model.py:12)"), 1500);
    EXPECT_EQ(folded.at("train  (/home/me/train.py:40);loss,fn  (/home/me/model.py:30)"), 300);
    EXPECT_EQ(folded.at("(no stack)"), 70);
}

TEST(LiveStacks, TheFrameTreeSumsTheStacksAndLaysThemSideBySide) {
    const StackRun r = stackRun();
    auto tl = Timeline::build(r.trace);
    ASSERT_TRUE(tl.ok());
    const DeviceTimeline& d = (*tl)->devices().at(0);
    auto s = liveStacks(r.trace, **tl, std::nullopt, std::nullopt);
    ASSERT_TRUE(s.ok()) << s.message();
    const FrameTree tree = frameTree(*s);
    ASSERT_FALSE(tree.nodes.empty());
    const FrameNode& root = tree.nodes[0];
    EXPECT_EQ(root.frame, "");
    EXPECT_EQ(root.bytes, s->live_bytes);
    EXPECT_EQ(root.bytes, d.peak.bytes);
    EXPECT_EQ(tree.max_depth, 3);
    // The root's children: train (1500 + 300 + 4000) and (no stack) 70.
    ASSERT_EQ(root.children.size(), 2u);
    const FrameNode& train = tree.nodes[size_t(root.children[0])];
    EXPECT_EQ(train.frame, "train  (/home/me/train.py:40)");
    EXPECT_EQ(train.bytes, 1500 + 300 + 4000);
    EXPECT_EQ(train.offset, 0);
    const FrameNode& none = tree.nodes[size_t(root.children[1])];
    EXPECT_EQ(none.frame, "(no stack)");
    EXPECT_EQ(none.offset, train.bytes);
    // forward holds attention's 4000 and its own 1500; loss 300 beside it.
    ASSERT_EQ(train.children.size(), 2u);
    const FrameNode& fwd = tree.nodes[size_t(train.children[0])];
    EXPECT_EQ(fwd.frame, "forward  (/home/me/model.py:12)");
    EXPECT_EQ(fwd.bytes, 5500);
    EXPECT_EQ(fwd.depth, 2);
    EXPECT_EQ(tree.nodes[size_t(train.children[1])].offset, 5500);
    // Every node: its children fit inside it, side by side; its intervals'
    // bytes are its bytes.
    for (size_t n = 0; n < tree.nodes.size(); ++n) {
        const FrameNode& node = tree.nodes[n];
        int64_t left = node.offset, sum = 0;
        for (int32_t c : node.children) {
            EXPECT_EQ(tree.nodes[size_t(c)].offset, left);
            EXPECT_EQ(tree.nodes[size_t(c)].parent, int32_t(n));
            left += tree.nodes[size_t(c)].bytes;
            sum += tree.nodes[size_t(c)].bytes;
        }
        EXPECT_LE(sum, node.bytes);
        int64_t bytes = 0;
        const std::vector<uint32_t> iv = intervalsOfNode(*s, tree, int32_t(n));
        EXPECT_EQ(iv.size(), size_t(node.count));
        for (uint32_t i : iv) bytes += int64_t(d.intervals.at(i).size);
        EXPECT_EQ(bytes, node.bytes) << node.frame;
    }
    EXPECT_EQ(intervalsOfNode(*s, tree, int32_t(tree.nodes.size())), std::vector<uint32_t>{});
}

TEST(LiveStacks, AtATimeTheStacksAddUpToTheLiveBytesThen) {
    const StackRun r = stackRun();
    auto tl = Timeline::build(r.trace);
    ASSERT_TRUE(tl.ok());
    const DeviceTimeline& d = (*tl)->devices().at(0);
    for (int64_t x : {10, 35, 50, 65, 70}) {
        auto s = liveStacks(r.trace, **tl, int16_t(0), x);
        ASSERT_TRUE(s.ok()) << s.message();
        EXPECT_FALSE(s->at_peak);
        EXPECT_EQ(s->live_bytes, d.live.valueAt(x)) << x;
        int64_t sum = 0;
        for (const auto& [stack, bytes] : parseFolded(toFolded(*s))) sum += bytes;
        EXPECT_EQ(sum, d.live.valueAt(x)) << x;
    }
    // Seconds from the device's first event.
    EXPECT_EQ(timeFromStart(r.trace, d, 1e-8), 20);
    const std::string text = liveStacksText(r.trace, *liveStacks(r.trace, **tl, {}, {}), 20);
    EXPECT_NE(text.find("device 0 at the peak: 5.73 KiB live in 4 stacks"), std::string::npos)
        << text;
}

TEST(LiveStacks, BadInputIsAClearError) {
    const StackRun r = stackRun();
    auto tl = Timeline::build(r.trace);
    ASSERT_TRUE(tl.ok());
    auto no_device = liveStacks(r.trace, **tl, int16_t(3), std::nullopt);
    ASSERT_FALSE(no_device.ok());
    EXPECT_EQ(no_device.message(), "the trace has no device 3");
    auto late = liveStacks(r.trace, **tl, int16_t(0), 5000);
    ASSERT_FALSE(late.ok());
    EXPECT_NE(late.message().find("outside device 0's events"), std::string::npos)
        << late.message();
    Trace empty;
    auto etl = Timeline::build(empty);
    ASSERT_TRUE(etl.ok());
    auto none = liveStacks(empty, **etl, std::nullopt, std::nullopt);
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.message(), "the trace holds no allocations");
}

}  // namespace
}  // namespace memscope
