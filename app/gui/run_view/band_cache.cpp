#include "run_view/band_cache.h"

namespace memscope::gui {

namespace {

bool sameRequest(const BandRequest& a, const BandRequest& b) {
    return a.mode == b.mode && a.x0 == b.x0 && a.x1 == b.x1 && a.max_points == b.max_points &&
           a.modules == b.modules;
}

}  // namespace

BandSet BandCache::bands(const DeviceTimeline& tl, const AxisMap& map, const BandRequest& req,
                         const std::shared_ptr<const ModuleStack>& modules) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->tl == &tl && sameRequest(it->req, req)) {
            entries_.splice(entries_.begin(), entries_, it);
            return entries_.front().bands;
        }
    BandSet computed = computeBands(tl, map, req);
    ++computed_;
    entries_.push_front(Entry{&tl, req, req.modules ? modules : nullptr, computed});
    if (entries_.size() > kEntries) entries_.pop_back();
    return computed;
}

}  // namespace memscope::gui
