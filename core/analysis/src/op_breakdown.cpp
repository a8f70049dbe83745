#include "memscope/analysis/op_breakdown.h"

#include <algorithm>
#include <unordered_map>

#include "memscope/analysis/allocation_op.h"

namespace memscope {

OpBreakdown opsOf(const Trace& trace, const OpAttribution& ops, const DeviceTimeline& tl,
                  std::span<const uint32_t> live) {
    OpBreakdown out;
    out.source = ops.empty() ? OpSource::None : ops.source();
    std::unordered_map<uint32_t, size_t> row_of;  // StringId value -> row
    for (uint32_t id : live) {
        if (id >= tl.intervals.size()) continue;
        const AllocationInterval& a = tl.intervals[id];
        const std::optional<AllocationOp> op = opOfInterval(ops, a);
        const StringId name = op ? op->name : StringId{};
        auto [it, added] = row_of.try_emplace(name.value, out.rows.size());
        if (added) {
            OpShare row;
            row.name = name;
            row.label =
                name.isNull() ? std::string(kOutsideOpsLabel) : std::string(trace.string(name));
            out.rows.push_back(std::move(row));
        }
        OpShare& row = out.rows[it->second];
        const auto bytes = static_cast<int64_t>(a.size);
        row.bytes += bytes;
        ++row.count;
        row.by_category[static_cast<size_t>(a.category)] += bytes;
        out.total += bytes;
    }
    std::stable_sort(out.rows.begin(), out.rows.end(),
                     [](const OpShare& x, const OpShare& y) { return x.bytes > y.bytes; });
    return out;
}

OpBreakdown opsAtPeak(const Trace& trace, const OpAttribution& ops, const DeviceTimeline& tl) {
    return opsOf(trace, ops, tl, tl.peak.live_intervals);
}

}  // namespace memscope
