#include "memscope/view/phase_bands.h"

#include <algorithm>
#include <map>

namespace memscope {

namespace {

int rowOf(PhaseKind k) {
    switch (k) {
        case PhaseKind::Step:
            return 0;
        case PhaseKind::Forward:
        case PhaseKind::Backward:
        case PhaseKind::Optimizer:
            return 1;
        case PhaseKind::Block:
        case PhaseKind::Recompute:
            return 2;
        case PhaseKind::Range:
            return 3;
    }
    return 3;
}

PhaseBandShade shadeOf(const Phase& p) {
    switch (p.kind) {
        case PhaseKind::Step:
            return p.step % 2 == 0 ? PhaseBandShade::StepEven : PhaseBandShade::StepOdd;
        case PhaseKind::Forward:
            return PhaseBandShade::Forward;
        case PhaseKind::Backward:
            return PhaseBandShade::Backward;
        case PhaseKind::Optimizer:
            return PhaseBandShade::Optimizer;
        case PhaseKind::Block:
            return p.block % 2 == 0 ? PhaseBandShade::BlockEven : PhaseBandShade::BlockOdd;
        case PhaseKind::Recompute:
            return PhaseBandShade::Recompute;
        case PhaseKind::Range:
            return PhaseBandShade::Range;
    }
    return PhaseBandShade::Range;
}

// Labels by (string, inferred), each kept once.
class LabelInterner {
public:
    LabelInterner(const Trace& trace, std::vector<std::string>& names)
        : trace_(trace), names_(names), index_(2 * trace.strings.size(), kUnset) {}

    uint32_t operator()(StringId id, bool inferred) {
        const size_t key = 2 * size_t(id.value) + (inferred ? 1 : 0);
        if (key >= index_.size()) return add(id, inferred);  // not in the table: no reuse
        if (index_[key] == kUnset) index_[key] = add(id, inferred);
        return index_[key];
    }

private:
    static constexpr uint32_t kUnset = UINT32_MAX;
    uint32_t add(StringId id, bool inferred) {
        std::string name(trace_.string(id));
        if (inferred) name += " (inferred)";
        names_.push_back(std::move(name));
        return uint32_t(names_.size() - 1);
    }
    const Trace& trace_;
    std::vector<std::string>& names_;
    std::vector<uint32_t> index_;
};

}  // namespace

PhaseBandData buildPhaseBands(const Trace& trace, int16_t device) {
    PhaseBandData d;
    LabelInterner label(trace, d.names);
    std::vector<PhaseBandItem> items;  // in the trace's order
    items.reserve(trace.phases.size() + trace.annotations.size());
    for (const Phase& p : trace.phases) {
        if (p.device >= 0 && p.device != device) continue;
        items.push_back({p.start, std::max(p.end, p.start), label(p.name, p.inferred), shadeOf(p),
                         p.inferred, uint8_t(rowOf(p.kind))});
    }
    // Annotation START/END pairs become ranges (matched by name, innermost
    // first); unmatched ones and instants are ticks.
    constexpr PhaseBandShade range = PhaseBandShade::Range;
    constexpr uint8_t kRangeRow = 3;
    std::map<StringId, std::vector<int64_t>> open;
    for (const Annotation& a : trace.annotations) {
        if (a.device >= 0 && a.device != device) continue;
        if (a.stage == AnnotationStage::Start) {
            open[a.name].push_back(a.time);
        } else if (a.stage == AnnotationStage::End && !open[a.name].empty()) {
            const int64_t s = open[a.name].back();
            open[a.name].pop_back();
            items.push_back(
                {s, std::max(a.time, s), label(a.name, false), range, false, kRangeRow});
        } else {
            items.push_back({a.time, a.time, label(a.name, false), range, false, kRangeRow});
        }
    }
    for (auto& [name, starts] : open)
        for (int64_t s : starts)
            items.push_back({s, s, label(name, false), range, false, kRangeRow});
    // Each row's items by start. Recorded phases mostly come in start order
    // already (a step is logged when it closes, after what it holds, but it
    // has a row of its own), so a row is sorted only when it needs it.
    for (const PhaseBandItem& it : items)
        d.rows[std::min<size_t>(it.row, PhaseBandData::kRows - 1)].push_back(it);
    for (size_t row = 0; row < PhaseBandData::kRows; ++row) {
        auto& row_items = d.rows[row];
        const auto byStart = [](const PhaseBandItem& a, const PhaseBandItem& b) {
            return a.start < b.start;
        };
        if (!std::is_sorted(row_items.begin(), row_items.end(), byStart))
            std::stable_sort(row_items.begin(), row_items.end(), byStart);
        std::vector<int64_t> ends(row_items.size());
        for (size_t k = 0; k < row_items.size(); ++k) ends[k] = row_items[k].end;
        d.row_reach[row] = FirstReaching(ends);
    }
    return d;
}

size_t PhaseBandData::itemCount() const {
    size_t n = 0;
    for (const auto& row : rows) n += row.size();
    return n;
}

std::vector<std::string> phaseNamesAt(const PhaseBandData& data, int64_t x) {
    std::vector<std::string> names;
    for (int row = 0; row < 3; ++row) {  // the nested phases; row 3 holds annotations
        const auto& items = data.rows[size_t(row)];
        for (size_t k = data.firstReaching(row, x + 1); k < items.size(); ++k) {
            const PhaseBandItem& it = items[k];
            if (it.start > x) break;
            if (it.end > x) names.push_back(data.nameOf(it));
        }
    }
    return names;
}

}  // namespace memscope
