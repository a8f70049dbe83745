#pragma once
// The bands of the last few ranges drawn, so that a range drawn a moment ago
// (the whole trace again, zoomed out and back) is not reduced again: at the
// whole trace of a 1 GB snapshot, reducing the live series was 4-6 ms of a
// 15 ms frame. A range not drawn before pays as before, plus a copy.

#include <cstddef>
#include <list>
#include <memory>

#include "run_view/timeline_bands.h"

namespace memscope::gui {

class BandCache {
public:
    // The bands of `req` over `tl` (and `modules`, the stack req.modules
    // points to, kept alive while cached), computed or remembered.
    BandSet bands(const DeviceTimeline& tl, const AxisMap& map, const BandRequest& req,
                  const std::shared_ptr<const ModuleStack>& modules);
    // Another run, device or axis: nothing remembered holds.
    void clear() { entries_.clear(); }
    // How many requests were computed rather than remembered (for tests).
    size_t computed() const { return computed_; }

private:
    static constexpr size_t kEntries = 4;
    struct Entry {
        const DeviceTimeline* tl = nullptr;
        BandRequest req;
        std::shared_ptr<const ModuleStack> modules;
        BandSet bands;
    };
    std::list<Entry> entries_;  // most recent first
    size_t computed_ = 0;
};

}  // namespace memscope::gui
