#include "memscope/view/allocation_sites.h"

#include <limits>
#include <unordered_map>

#include "memscope/inference/frames.h"

namespace memscope {

uint64_t siteHash(std::string_view label) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across runs and builds
    for (const char c : label) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ull;
    }
    return h;
}

AllocationSites::AllocationSites() : sites_(1) {
    sites_[0].hash = siteHash("");
}

AllocationSites AllocationSites::build(const Trace& trace, const DeviceTimeline& timeline) {
    AllocationSites out;
    constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
    // Memoized by stack (many allocations share one) and then by frame (many
    // stacks share their user frame).
    std::vector<uint32_t> byStack(trace.stackCount(), kUnset);
    std::unordered_map<uint32_t, uint32_t> byFrame;
    FrameRoleCache roles(trace);
    out.of_.resize(timeline.intervals.size(), kNoSite);
    for (size_t i = 0; i < timeline.intervals.size(); ++i) {
        const StackId stack = timeline.intervals[i].stack;
        if (stack.isNull() || stack.value >= byStack.size()) continue;
        uint32_t& memo = byStack[stack.value];
        if (memo == kUnset) {
            memo = kNoSite;
            if (const auto frame = siteFrame(trace, stack, roles)) {
                const auto [it, added] = byFrame.try_emplace(frame->value, 0);
                if (added) {
                    it->second = uint32_t(out.sites_.size());
                    AllocationSite site;
                    site.frame = frame;
                    site.label = frameText(trace, *frame);
                    site.hash = siteHash(site.label);
                    out.sites_.push_back(std::move(site));
                }
                memo = it->second;
            }
        }
        out.of_[i] = memo;
    }
    return out;
}

const AllocationSite& AllocationSites::site(uint32_t id) const {
    return id < sites_.size() ? sites_[id] : sites_[kNoSite];
}

size_t AllocationSites::memoryBytes() const {
    size_t bytes = of_.capacity() * sizeof(uint32_t) + sites_.capacity() * sizeof(AllocationSite);
    for (const AllocationSite& s : sites_) bytes += s.label.capacity();
    return bytes;
}

}  // namespace memscope
