#include "run_view/phase_bands.h"

#include <QFontMetricsF>
#include <algorithm>
#include <map>

#include "common/format.h"
#include "memscope/base/units.h"

namespace memscope::gui {

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

QColor colorOf(const Phase& p) {
    switch (p.kind) {
        case PhaseKind::Step:
            return (p.step % 2 == 0) ? QColor(0x8c, 0x8c, 0x9c) : QColor(0x6c, 0x6c, 0x7c);
        case PhaseKind::Forward:
            return QColor(0x4e, 0x79, 0xa7);
        case PhaseKind::Backward:
            return QColor(0xf2, 0x8e, 0x2b);
        case PhaseKind::Optimizer:
            return QColor(0x59, 0xa1, 0x4f);
        case PhaseKind::Block:
            return (p.block % 2 == 0) ? QColor(0x9d, 0x7e, 0xc9) : QColor(0x7a, 0x5c, 0xa8);
        case PhaseKind::Recompute:
            return QColor(0xe1, 0x57, 0x59);
        case PhaseKind::Range:
            return QColor(0x4a, 0xa8, 0xa0);
    }
    return Qt::gray;
}

// Phases memscope inferred are drawn paler than recorded ones (and named so).
QRgb shadeOf(const Phase& p) {
    const QColor c = colorOf(p);
    return (p.inferred ? c.lighter(130) : c).rgba();
}

// Labels by (string, inferred), converted to QString once each.
class LabelInterner {
public:
    LabelInterner(const Trace& trace, std::vector<QString>& names)
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
        QString name = toQString(trace_.string(id));
        if (inferred) name += QStringLiteral(" (inferred)");
        names_.push_back(std::move(name));
        return uint32_t(names_.size() - 1);
    }
    const Trace& trace_;
    std::vector<QString>& names_;
    std::vector<uint32_t> index_;
};

}  // namespace

PhaseBandData buildPhaseBands(const Trace& trace, int16_t device) {
    PhaseBandData d;
    LabelInterner label(trace, d.names);
    d.items.reserve(trace.phases.size() + trace.annotations.size());
    for (const Phase& p : trace.phases) {
        if (p.device >= 0 && p.device != device) continue;
        d.items.push_back({p.start, std::max(p.end, p.start), label(p.name, p.inferred), shadeOf(p),
                           uint8_t(rowOf(p.kind))});
    }
    // Annotation START/END pairs become ranges (matched by name, innermost
    // first); unmatched ones and instants are ticks.
    const QRgb range = QColor(0x4a, 0xa8, 0xa0).rgba();
    constexpr uint8_t kRangeRow = 3;
    std::map<StringId, std::vector<int64_t>> open;
    for (const Annotation& a : trace.annotations) {
        if (a.device >= 0 && a.device != device) continue;
        if (a.stage == AnnotationStage::Start) {
            open[a.name].push_back(a.time);
        } else if (a.stage == AnnotationStage::End && !open[a.name].empty()) {
            const int64_t s = open[a.name].back();
            open[a.name].pop_back();
            d.items.push_back({s, std::max(a.time, s), label(a.name, false), range, kRangeRow});
        } else {
            d.items.push_back({a.time, a.time, label(a.name, false), range, kRangeRow});
        }
    }
    for (auto& [name, starts] : open)
        for (int64_t s : starts) d.items.push_back({s, s, label(name, false), range, kRangeRow});
    // Each row's items by start. Recorded phases mostly come in start order
    // already (a step is logged when it closes, after what it holds, but it
    // has a row of its own), so a row is sorted only when it needs it.
    for (uint32_t i = 0; i < d.items.size(); ++i)
        d.rows[std::min<size_t>(d.items[i].row, PhaseBandData::kRows - 1)].push_back(i);
    for (size_t row = 0; row < PhaseBandData::kRows; ++row) {
        auto& indexes = d.rows[row];
        const auto byStart = [&](uint32_t a, uint32_t b) {
            return d.items[a].start < d.items[b].start;
        };
        if (!std::is_sorted(indexes.begin(), indexes.end(), byStart))
            std::stable_sort(indexes.begin(), indexes.end(), byStart);
        auto& ends = d.row_max_end[row];
        ends.reserve(indexes.size());
        for (const uint32_t i : indexes)
            ends.push_back(ends.empty() ? d.items[i].end : std::max(ends.back(), d.items[i].end));
    }
    return d;
}

size_t PhaseBandData::firstReaching(int row, int64_t x) const {
    const auto& ends = row_max_end[size_t(row)];
    return size_t(std::lower_bound(ends.begin(), ends.end(), x) - ends.begin());
}

void paintPhaseBands(QPainter& painter, const QRectF& area, const PhaseBandData& data,
                     const AxisMap& map, double x0, double x1, const QPalette& palette) {
    if (area.width() <= 0 || !(x1 > x0)) return;
    painter.save();
    painter.setClipRect(area);
    painter.fillRect(area, palette.color(QPalette::Base));
    const double rowH = area.height() / PhaseBandData::kRows;
    const double scale = area.width() / (x1 - x0);
    QFont font = painter.font();
    font.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.8));
    painter.setFont(font);
    const QFontMetricsF fm(font);
    // Items narrower than a pixel are merged per row and pixel so that a
    // zoomed-out view of thousands of blocks costs one rectangle per pixel.
    std::array<double, PhaseBandData::kRows> lastPx;
    lastPx.fill(-1e9);
    const int64_t lo = map.inverse(x0), hi = addSaturating(map.inverse(x1), 1);
    for (int row = 0; row < PhaseBandData::kRows; ++row) {
        for (size_t k = data.firstReaching(row, lo); k < data.rows[size_t(row)].size(); ++k) {
            const PhaseBandItem& it = data.items[data.rows[size_t(row)][k]];
            if (it.start > hi) break;
            if (it.end < lo) continue;
            const double px0 = area.left() + (map.forward(it.start) - x0) * scale;
            const double px1 = area.left() + (map.forward(it.end) - x0) * scale;
            const double w = std::max(1.0, px1 - px0);
            if (w < 2.0 && std::floor(px0) <= lastPx[size_t(row)]) continue;
            lastPx[size_t(row)] = std::floor(px0 + w);
            const QRectF r(std::max(px0, area.left() - 1), area.top() + row * rowH + 1,
                           std::min(w, area.width() + 2), rowH - 2);
            painter.fillRect(r, QColor::fromRgba(it.color));
            if (r.width() > 24) {
                painter.setPen(Qt::white);
                painter.drawText(r.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                                 fm.elidedText(data.nameOf(it), Qt::ElideRight, r.width() - 4));
            }
        }
    }
    painter.restore();
}

QString phasesAt(const PhaseBandData& data, const AxisMap& map, double x) {
    const int64_t rx = map.inverse(x);
    QStringList names;
    for (int row = 0; row < 3; ++row) {  // the nested phases; row 3 holds annotations
        const auto& indexes = data.rows[size_t(row)];
        for (size_t k = data.firstReaching(row, rx + 1); k < indexes.size(); ++k) {
            const PhaseBandItem& it = data.items[indexes[k]];
            if (it.start > rx) break;
            if (it.end > rx) names << data.nameOf(it);
        }
    }
    return names.join(QStringLiteral(" / "));
}

}  // namespace memscope::gui
