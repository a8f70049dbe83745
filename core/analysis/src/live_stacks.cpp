#include "memscope/analysis/live_stacks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>
#include <unordered_map>

#include "memscope/base/units.h"
#include "memscope/inference/frames.h"

namespace memscope {

namespace {

std::string secondsText(int64_t ns) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.9g s", double(ns) / 1e9);
    return buf;
}

}  // namespace

int64_t timeFromStart(const Trace& trace, const DeviceTimeline& timeline, double seconds) {
    if (trace.metadata.time_base == TimeBase::EventIndex)
        return timeline.start + int64_t(std::llround(seconds));
    return timeline.start + int64_t(std::llround(seconds * 1e9));
}

Result<LiveStacks> liveStacks(const Trace& trace, const Timeline& timeline,
                              std::optional<int16_t> device, std::optional<int64_t> time) {
    const DeviceTimeline* tl = nullptr;
    if (device) {
        tl = timeline.device(*device);
        if (!tl) return makeError("the trace has no device " + std::to_string(*device));
    } else {
        tl = timeline.highestPeakDevice();
        if (!tl) return makeError("the trace holds no allocations");
    }
    LiveStacks out;
    out.device = tl->device;
    std::vector<uint32_t> at_time;
    std::span<const uint32_t> live;
    if (time) {
        if (*time < tl->start || *time > tl->end)
            return makeError("the time is outside device " + std::to_string(tl->device) +
                             "'s events (from 0 to " +
                             (trace.metadata.time_base == TimeBase::EventIndex
                                  ? std::to_string(tl->end - tl->start) + " events"
                                  : secondsText(tl->end - tl->start)) +
                             ")");
        out.time = *time;
        at_time = tl->liveAt(*time);
        live = at_time;
    } else {
        out.at_peak = true;
        out.time = tl->peak.time;
        live = tl->peak.live_intervals;
    }
    // Stacks by id; each stack's frames are made text once.
    std::unordered_map<uint32_t, size_t> row_of_stack;
    std::unordered_map<std::string, size_t> row_of_text;  // stacks whose visible frames agree
    for (uint32_t i : live) {
        if (i >= tl->intervals.size()) continue;
        const AllocationInterval& a = tl->intervals[i];
        auto [it, fresh] = row_of_stack.try_emplace(a.stack.value, 0);
        if (fresh) {
            std::vector<FrameId> frames = visibleFrames(trace, a.stack, SIZE_MAX);
            LiveStack s;
            for (auto f = frames.rbegin(); f != frames.rend(); ++f)
                s.frames.push_back(frameText(trace, *f));
            if (s.frames.empty()) s.frames.emplace_back(kNoStackFrame);
            std::string key;
            for (const std::string& f : s.frames) key += f + '\n';
            auto [t, added] = row_of_text.try_emplace(key, out.stacks.size());
            if (added) out.stacks.push_back(std::move(s));
            it->second = t->second;
        }
        LiveStack& s = out.stacks[it->second];
        s.bytes = addSaturating(s.bytes, int64_t(std::min<uint64_t>(a.size, INT64_MAX)));
        s.count += 1;
        s.intervals.push_back(i);
        out.live_bytes =
            addSaturating(out.live_bytes, int64_t(std::min<uint64_t>(a.size, INT64_MAX)));
    }
    std::sort(out.stacks.begin(), out.stacks.end(), [](const LiveStack& a, const LiveStack& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.frames < b.frames;
    });
    for (LiveStack& s : out.stacks) std::sort(s.intervals.begin(), s.intervals.end());
    return out;
}

FrameTree frameTree(const LiveStacks& stacks) {
    FrameTree tree;
    tree.nodes.emplace_back();
    // (parent, frame) -> node
    std::map<std::pair<int32_t, std::string_view>, int32_t> child_of;
    for (uint32_t si = 0; si < stacks.stacks.size(); ++si) {
        const LiveStack& s = stacks.stacks[si];
        int32_t node = 0;
        auto add = [&](int32_t n) {
            FrameNode& f = tree.nodes[size_t(n)];
            f.bytes = addSaturating(f.bytes, s.bytes);
            f.count += s.count;
            f.stacks.push_back(si);
        };
        add(0);
        for (const std::string& frame : s.frames) {
            auto [it, fresh] = child_of.try_emplace({node, std::string_view(frame)}, 0);
            if (fresh) {
                FrameNode child;
                child.frame = frame;
                child.parent = node;
                child.depth = tree.nodes[size_t(node)].depth + 1;
                tree.max_depth = std::max(tree.max_depth, child.depth);
                it->second = int32_t(tree.nodes.size());
                tree.nodes[size_t(node)].children.push_back(it->second);
                tree.nodes.push_back(std::move(child));
            }
            node = it->second;
            add(node);
        }
    }
    // Children most bytes first; offsets from the parents' (parents come first).
    for (FrameNode& n : tree.nodes) {
        std::sort(n.children.begin(), n.children.end(), [&](int32_t a, int32_t b) {
            const FrameNode& x = tree.nodes[size_t(a)];
            const FrameNode& y = tree.nodes[size_t(b)];
            return x.bytes != y.bytes ? x.bytes > y.bytes : x.frame < y.frame;
        });
    }
    for (FrameNode& n : tree.nodes) {
        int64_t left = n.offset;
        for (int32_t c : n.children) {
            tree.nodes[size_t(c)].offset = left;
            left = addSaturating(left, tree.nodes[size_t(c)].bytes);
        }
    }
    return tree;
}

std::vector<uint32_t> intervalsOfNode(const LiveStacks& stacks, const FrameTree& tree,
                                      int32_t node) {
    std::vector<uint32_t> out;
    if (node < 0 || size_t(node) >= tree.nodes.size()) return out;
    for (uint32_t si : tree.nodes[size_t(node)].stacks) {
        if (si >= stacks.stacks.size()) continue;
        const std::vector<uint32_t>& iv = stacks.stacks[si].intervals;
        out.insert(out.end(), iv.begin(), iv.end());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace memscope
