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

}  // namespace

PhaseBandData buildPhaseBands(const Trace& trace, int16_t device) {
    PhaseBandData d;
    d.items.reserve(trace.phases.size() + trace.annotations.size());
    for (const Phase& p : trace.phases) {
        if (p.device >= 0 && p.device != device) continue;
        // Phases memscope inferred say so and are drawn paler than recorded ones.
        QString name = toQString(trace.string(p.name));
        if (p.inferred) name += QStringLiteral(" (inferred)");
        d.items.push_back({p.start, std::max(p.end, p.start), rowOf(p.kind),
                           p.inferred ? colorOf(p).lighter(130) : colorOf(p), name});
    }
    // Annotation START/END pairs become ranges (matched by name, innermost
    // first); unmatched ones and instants are ticks.
    std::map<StringId, std::vector<int64_t>> open;
    for (const Annotation& a : trace.annotations) {
        if (a.device >= 0 && a.device != device) continue;
        const QColor c(0x4a, 0xa8, 0xa0);
        if (a.stage == AnnotationStage::Start) {
            open[a.name].push_back(a.time);
        } else if (a.stage == AnnotationStage::End && !open[a.name].empty()) {
            const int64_t s = open[a.name].back();
            open[a.name].pop_back();
            d.items.push_back({s, std::max(a.time, s), 3, c, toQString(trace.string(a.name))});
        } else {
            d.items.push_back({a.time, a.time, 3, c, toQString(trace.string(a.name))});
        }
    }
    for (auto& [name, starts] : open)
        for (int64_t s : starts)
            d.items.push_back({s, s, 3, QColor(0x4a, 0xa8, 0xa0), toQString(trace.string(name))});
    std::sort(d.items.begin(), d.items.end(),
              [](const PhaseBandItem& a, const PhaseBandItem& b) { return a.start < b.start; });
    for (uint32_t i = 0; i < d.items.size(); ++i) {
        const auto row = size_t(std::clamp(d.items[i].row, 0, PhaseBandData::kRows - 1));
        auto& ends = d.row_max_end[row];
        d.rows[row].push_back(i);
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
            if (w < 2.0 && std::floor(px0) <= lastPx[size_t(it.row)]) continue;
            lastPx[size_t(it.row)] = std::floor(px0 + w);
            const QRectF r(std::max(px0, area.left() - 1), area.top() + it.row * rowH + 1,
                           std::min(w, area.width() + 2), rowH - 2);
            painter.fillRect(r, it.color);
            if (r.width() > 24) {
                painter.setPen(Qt::white);
                painter.drawText(r.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                                 fm.elidedText(it.name, Qt::ElideRight, r.width() - 4));
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
            if (it.end > rx) names << it.name;
        }
    }
    return names.join(QStringLiteral(" / "));
}

}  // namespace memscope::gui
