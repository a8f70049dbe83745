#include "memscope/analysis/source_lines.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "memscope/analysis/module_breakdown.h"
#include "memscope/inference/frames.h"

namespace memscope {
namespace {

// The innermost user frame of a stack.
std::optional<FrameId> userFrame(const Trace& trace, StackId stack, FrameRoleCache& roles) {
    if (stack.isNull() || stack.value >= trace.stackCount()) return std::nullopt;
    for (FrameId f : trace.stack(stack))
        if (roles.role(f) == FrameRole::User) return f;
    return std::nullopt;
}

}  // namespace

LinesAtPeak linesAtPeak(const Trace& trace, const ModuleAttribution& modules,
                        const DeviceTimeline& tl, size_t top) {
    LinesAtPeak out;
    FrameRoleCache roles(trace);
    std::unordered_map<uint32_t, std::optional<FrameId>> frame_of_stack;
    struct Acc {
        LineBytes row;
        std::map<std::string, int64_t> by_module;
    };
    std::map<std::pair<uint32_t, uint32_t>, Acc> by_line;  // (file, line); (0, 0) = no user frame
    const bool has_modules = !modules.empty();
    for (uint32_t i : tl.peak.live_intervals) {
        if (i >= tl.intervals.size()) continue;
        const AllocationInterval& a = tl.intervals[i];
        auto [it, fresh] = frame_of_stack.try_emplace(a.stack.value);
        if (fresh) it->second = userFrame(trace, a.stack, roles);
        std::pair<uint32_t, uint32_t> key{0, 0};
        if (it->second) {
            const Frame& f = trace.frame(*it->second);
            key = {f.file.value, f.line};
        }
        Acc& acc = by_line[key];
        if (acc.row.count == 0) {
            if (it->second) {
                const Frame& f = trace.frame(*it->second);
                acc.row.file = trace.string(f.file);
                acc.row.line = f.line;
                acc.row.function = trace.string(f.function);
                acc.row.label = frameText(trace, *it->second);
            } else {
                acc.row.label = kNoUserLineLabel;
            }
        }
        const int64_t size = int64_t(std::min<uint64_t>(a.size, INT64_MAX / 4));
        acc.row.bytes += size;
        acc.row.count += 1;
        acc.row.intervals.push_back(i);
        out.total += size;
        if (has_modules) {
            const ModuleId m = moduleGroup(trace, moduleOfInterval(modules, a).module, {});
            acc.by_module[m.value ? modulePath(trace, m) : std::string(kOutsideModulesLabel)] +=
                size;
        }
    }
    std::vector<LineBytes> rows;
    std::optional<LineBytes> none;
    for (auto& [key, acc] : by_line) {
        if (!acc.by_module.empty())
            acc.row.module =
                std::max_element(acc.by_module.begin(), acc.by_module.end(),
                                 [](const auto& x, const auto& y) { return x.second < y.second; })
                    ->first;
        if (key == std::pair<uint32_t, uint32_t>{0, 0})
            none = std::move(acc.row);
        else
            rows.push_back(std::move(acc.row));
    }
    std::sort(rows.begin(), rows.end(), [](const LineBytes& x, const LineBytes& y) {
        return x.bytes != y.bytes ? x.bytes > y.bytes : x.label < y.label;
    });
    for (size_t i = top; i < rows.size(); ++i) {
        out.rest_bytes += rows[i].bytes;
        ++out.rest_count;
    }
    if (rows.size() > top) rows.resize(top);
    out.rows = std::move(rows);
    if (none) out.rows.push_back(std::move(*none));
    return out;
}

}  // namespace memscope
