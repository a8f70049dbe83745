#pragma once
// The stacks alive at a moment: what a flame graph (icicle) of one time
// draws, and what `memscope-cli stacks --folded` prints for flamegraph.pl and
// speedscope. Every live allocation of a device at the moment, grouped by
// its stack (noise frames left out, frames.h), bytes summed; allocations
// without a stack (or with only noise frames) fall under "(no stack)". The
// stacks' bytes add up to the device's live bytes at that moment.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

inline constexpr std::string_view kNoStackFrame = "(no stack)";

struct LiveStack {
    // frameText of each visible frame, outermost (root) first; {"(no stack)"}
    // for allocations without one.
    std::vector<std::string> frames;
    int64_t bytes = 0;
    uint32_t count = 0;
    std::vector<uint32_t> intervals;  // its live allocations (DeviceTimeline::intervals), ascending
};

struct LiveStacks {
    int16_t device = 0;
    bool at_peak = false;
    int64_t time = 0;               // Event::time of the moment (the peak event's at the peak)
    int64_t live_bytes = 0;         // the device's live bytes then (= the sum of stacks' bytes)
    std::vector<LiveStack> stacks;  // most bytes first, then by frames
};

// The stacks merged into a tree of frames, what an icicle draws: the root
// (nodes[0], frame "") holds every live byte; a node's children are the
// frames called from it, most bytes first (then by text), and each node's
// bytes are the sum of the stacks through it; a node whose stacks end there
// holds more than its children. `offset` is the bytes to its left in its row
// (its parent's offset plus its elder siblings' bytes), so that a node spans
// [offset, offset + bytes) of the root's live_bytes.
struct FrameNode {
    std::string frame;  // frameText; "" for the root
    int32_t parent = -1;
    int32_t depth = 0;  // the root's 0
    int64_t bytes = 0;
    uint32_t count = 0;
    int64_t offset = 0;
    std::vector<int32_t> children;
    std::vector<uint32_t> stacks;  // indices into LiveStacks::stacks through this node
};

struct FrameTree {
    std::vector<FrameNode> nodes;  // nodes[0] the root; parents before children
    int32_t max_depth = 0;
};

FrameTree frameTree(const LiveStacks& stacks);

// The live allocations under a node (DeviceTimeline::intervals), ascending.
std::vector<uint32_t> intervalsOfNode(const LiveStacks& stacks, const FrameTree& tree,
                                      int32_t node);

// The moment: the device's peak (nullopt), else `time` (Event::time units;
// the intervals live at it: start <= time < end). The device is `device`, else
// the one with the highest peak. Errors name a device the trace lacks, a time
// outside the device's events, a trace without allocations.
Result<LiveStacks> liveStacks(const Trace& trace, const Timeline& timeline,
                              std::optional<int16_t> device, std::optional<int64_t> time);

// A time given as seconds since the device's first event, in Event::time
// units (ns; the event index itself for traces without a clock).
int64_t timeFromStart(const Trace& trace, const DeviceTimeline& timeline, double seconds);

}  // namespace memscope
