#include "summary_model.h"

#include <QFont>

#include "category_colors.h"
#include "format.h"

namespace memscope::gui {

SummaryTableModel::SummaryTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void SummaryTableModel::setEntries(std::vector<CompareEntry> entries, int baseline) {
    beginResetModel();
    entries_ = std::move(entries);
    baseline_ = entries_.empty() ? 0 : std::clamp(baseline, 0, int(entries_.size()) - 1);
    deltas_.clear();
    for (const CompareEntry& e : entries_)
        deltas_.push_back(compareToBaseline(Baseline<RunSummary>{entries_[size_t(baseline_)].summary},
                                            Candidate<RunSummary>{e.summary}));
    endResetModel();
}

void SummaryTableModel::setBaseline(int baseline) { setEntries(std::move(entries_), baseline); }

int SummaryTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(entries_.size());
}

int SummaryTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SummaryTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) return {};
    if (orientation == Qt::Vertical) return section + 1;
    switch (section) {
    case Name: return QStringLiteral("Run");
    case Peak: return QStringLiteral("Peak");
    case PeakDelta: return QStringLiteral("Δ peak vs baseline");
    case PeakTime: return QStringLiteral("Peak at");
    case PeakPhase: return QStringLiteral("Peak phase");
    case ReservedPeak: return QStringLiteral("Reserved peak");
    case StepTime: return QStringLiteral("Step time");
    case StepTimeRatio: return QStringLiteral("Step time vs baseline");
    case RecomputeOverhead: return QStringLiteral("Recompute overhead");
    default:
        if (section >= FirstCategory && section < ColumnCount)
            return categoryLabel(kAllCategories[size_t(section - FirstCategory)]) + QStringLiteral(" at peak");
        return {};
    }
}

QVariant SummaryTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(entries_.size()) || index.column() >= ColumnCount) return {};
    const CompareEntry& e = entries_[size_t(index.row())];
    const RunSummary& s = e.summary;
    const SummaryDelta& d = deltas_[size_t(index.row())];
    const int c = index.column();
    const bool isBaseline = index.row() == baseline_;
    if (role == Qt::FontRole && isBaseline && c == Name) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::TextAlignmentRole)
        return c == Name || c == PeakPhase ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    if (role == RawRole) {
        switch (c) {
        case Name: return toQString(s.name);
        case Peak: return qint64(s.peak_bytes);
        case PeakDelta: return qint64(d.peak_bytes);
        case PeakTime: return s.peak_seconds;
        case PeakPhase: return toQString(s.peak_phase);
        case ReservedPeak: return qint64(s.reserved_peak);
        case StepTime: return s.step_time_s ? QVariant(*s.step_time_s) : QVariant();
        case StepTimeRatio: return d.step_time_ratio ? QVariant(*d.step_time_ratio) : QVariant();
        case RecomputeOverhead: return s.recompute_overhead ? QVariant(*s.recompute_overhead) : QVariant();
        default: return qint64(s.peak_by_category[size_t(c - FirstCategory)]);
        }
    }
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    const Trace* trace = e.run ? e.run->trace(e.device) : nullptr;
    const DeviceTimeline* tl = e.run ? e.run->timeline(e.device) : nullptr;
    switch (c) {
    case Name: return toQString(s.name) + (isBaseline ? QStringLiteral(" (baseline)") : QString());
    case Peak: return formatBytes(double(s.peak_bytes));
    case PeakDelta:
        if (isBaseline) return QStringLiteral("—");
        return QStringLiteral("%1%2 (%3%)")
            .arg(d.peak_bytes > 0 ? QStringLiteral("+") : QString(), formatBytes(double(d.peak_bytes)))
            .arg((d.peak_ratio - 1.0) * 100.0, 0, 'f', 1);
    case PeakTime: return trace && tl ? formatRunTime(*trace, *tl, s.peak_time) : QString();
    case PeakPhase: return toQString(s.peak_phase);
    case ReservedPeak:
        // A source without segment events (a CPU trainer run) has no reserved curve.
        if (tl && tl->reserved.empty() && tl->reserved.initial == 0) return QStringLiteral("—");
        return formatBytes(double(s.reserved_peak));
    case StepTime: return s.step_time_s ? QStringLiteral("%1 ms").arg(*s.step_time_s * 1e3, 0, 'f', 2) : QString();
    case StepTimeRatio:
        if (isBaseline || !d.step_time_ratio) return isBaseline ? QStringLiteral("—") : QString();
        return QStringLiteral("×%1").arg(*d.step_time_ratio, 0, 'f', 2);
    case RecomputeOverhead:
        return s.recompute_overhead ? QStringLiteral("%1%").arg(*s.recompute_overhead * 100.0, 0, 'f', 1) : QString();
    default: return formatBytes(double(s.peak_by_category[size_t(c - FirstCategory)]));
    }
}

namespace {

QString csvField(const QVariant& v) {
    QString s = v.toString();
    if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) || s.contains(QLatin1Char('\n')))
        s = QLatin1Char('"') + s.replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"');
    return s;
}

}  // namespace

QString SummaryTableModel::toCsv() const {
    static const char* const raw[] = {"run", "peak_bytes", "peak_delta_bytes", "peak_seconds", "peak_phase",
                                      "reserved_peak_bytes", "step_time_s", "step_time_ratio",
                                      "recompute_overhead"};
    QStringList header;
    for (const char* h : raw) header << QLatin1String(h);
    for (Category cat : kAllCategories) header << QStringLiteral("%1_at_peak_bytes").arg(toQString(toString(cat)));
    QString out = header.join(QLatin1Char(',')) + QLatin1Char('\n');
    for (int r = 0; r < rowCount(); ++r) {
        QStringList row;
        for (int c = 0; c < ColumnCount; ++c) row << csvField(data(index(r, c), RawRole));
        out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
    }
    return out;
}

QString SummaryTableModel::toTextTable() const {
    const int cols[] = {Name, Peak, PeakDelta, PeakTime, PeakPhase, StepTime, RecomputeOverhead};
    std::vector<QStringList> rows;
    QStringList head;
    for (int c : cols) head << headerData(c, Qt::Horizontal).toString();
    rows.push_back(head);
    for (int r = 0; r < rowCount(); ++r) {
        QStringList row;
        for (int c : cols) row << data(index(r, c)).toString();
        rows.push_back(row);
    }
    std::vector<qsizetype> width(std::size(cols), 0);
    for (const QStringList& row : rows)
        for (size_t c = 0; c < width.size(); ++c) width[c] = std::max(width[c], row[qsizetype(c)].size());
    QString out;
    for (const QStringList& row : rows) {
        QStringList cells;
        for (size_t c = 0; c < width.size(); ++c) cells << row[qsizetype(c)].leftJustified(width[c]);
        out += cells.join(QStringLiteral("  ")).trimmed() + QLatin1Char('\n');
    }
    return out;
}

}  // namespace memscope::gui
