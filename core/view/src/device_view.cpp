#include "memscope/view/device_view.h"

namespace memscope {

std::vector<DeviceView> buildDeviceViews(const Trace& trace, const Timeline& timeline,
                                         const std::atomic<bool>* cancel) {
    std::vector<DeviceView> out;
    out.reserve(timeline.devices().size());
    for (const DeviceTimeline& d : timeline.devices()) {
        if (cancel && cancel->load(std::memory_order_relaxed)) break;
        DeviceView v;
        v.allocations = std::make_shared<const AllocationIndex>(
            AllocationIndex::build(trace, d, AllocationIndex::Detail::WithPyramid, cancel));
        // Fails only on a timeline that does not match its trace: no report then.
        if (auto ooms = oomReports(trace, d)) v.ooms = std::move(*ooms);
        for (const OomReport& r : v.ooms) {
            if (r.endState()) continue;
            TaskContext ctx;
            ctx.cancel = cancel;
            if (auto a = oomAlternatives(trace, timeline, r, ctx)) v.first_oom_alternatives = *a;
            break;
        }
        v.phase_bands = std::make_shared<const PhaseBandData>(buildPhaseBands(trace, d.device));
        out.push_back(std::move(v));
    }
    return out;
}

}  // namespace memscope
