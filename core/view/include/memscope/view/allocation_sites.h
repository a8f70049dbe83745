#pragma once
// The allocation site of every interval of a device: its first user frame,
// else its first library frame (frames.h's one rule). The by-allocation view
// colours each allocation by its site and merges thin bands per site; sites are
// computed once per device, memoized by stack, so a million allocations cost
// one look-up each.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct AllocationSite {
    std::optional<FrameId> frame;  // none: no stack, or only noise
    std::string label;             // frameText of the frame, "" without one
    // FNV-1a of the label: the same site gets the same colour in every run.
    uint64_t hash = 0;
};

class AllocationSites {
public:
    // Site 0 is "no site" (no stack captured, or only noise frames).
    static constexpr uint32_t kNoSite = 0;

    AllocationSites();
    static AllocationSites build(const Trace& trace, const DeviceTimeline& timeline);

    // The site of interval i (kNoSite for an index out of range).
    uint32_t siteOf(uint32_t interval) const {
        return interval < of_.size() ? of_[interval] : kNoSite;
    }
    const AllocationSite& site(uint32_t id) const;  // site 0 for an unknown id
    size_t siteCount() const { return sites_.size(); }
    size_t memoryBytes() const;

private:
    std::vector<uint32_t> of_;  // parallel to DeviceTimeline::intervals
    std::vector<AllocationSite> sites_;
};

uint64_t siteHash(std::string_view label);

}  // namespace memscope
