#pragma once
// What the views of one device draw and ask, built once when a run opens (on
// the GUI's loader thread, so that no first paint builds it): the index the
// by-allocation layout searches, the out-of-memory reports and what would
// have fit the first, and the phase strip. One struct per device, so that nothing is kept "parallel
// to" the timeline's devices by hand.

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "memscope/analysis/oom_report.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"
#include "memscope/view/allocation_layout.h"
#include "memscope/view/phase_bands.h"
#include "memscope/view/view_mode.h"
#include "memscope/whatif/oom_alternatives.h"

namespace memscope {

struct DeviceView {
    std::shared_ptr<const AllocationIndex> allocations;  // never null once built
    // Core's out-of-memory reports (oom_report.h), or the report of a
    // snapshot's end state when it holds nothing else.
    std::vector<OomReport> ooms;
    // What would have fit the first OOM with a request (oom_alternatives.h),
    // when it could be predicted: the banner's details.
    std::optional<OomAlternatives> first_oom_alternatives;
    std::shared_ptr<const PhaseBandData> phase_bands;  // never null once built
};

// One per device of `timeline`, in its order. Cancelled: what was built so far.
std::vector<DeviceView> buildDeviceViews(const Trace& trace, const Timeline& timeline,
                                         const std::atomic<bool>* cancel = nullptr);

}  // namespace memscope
