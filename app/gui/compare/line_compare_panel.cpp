#include "compare/line_compare_panel.h"

#include <QFont>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "common/format.h"

namespace memscope::gui {

namespace {

constexpr int kMaxLabelWidth = 520;  // pixels

QTableWidgetItem* cell(const QString& text, QVariant raw = {}) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (raw.isValid()) {
        item->setData(LineComparePanel::RawRole, raw);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    return item;
}

}  // namespace

LineComparePanel::LineComparePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    head_ = new QLabel(this);
    head_->setWordWrap(true);
    layout->addWidget(head_);
    table_ = new QTableWidget(this);
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    layout->addWidget(table_, 1);
    connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (size_t(row) < lines_.rows.size())
            activateRow(row);
        else  // the peaks' row
            emit highlightRequested(std::vector<std::vector<uint32_t>>(entries_.size()));
    });
}

void LineComparePanel::setEntries(const std::vector<CompareEntry>& entries) {
    entries_ = entries;
    std::vector<LinesAtPeak> perRun;
    perRun.reserve(entries_.size());
    for (const CompareEntry& e : entries_) {
        const Trace* trace = e.run ? e.run->trace(e.device) : nullptr;
        const DeviceTimeline* tl = e.run ? e.run->timeline(e.device) : nullptr;
        const ModuleAttribution* modules = e.run ? e.run->moduleAttribution(e.device) : nullptr;
        perRun.push_back(trace && tl && modules
                             ? linesAtPeak(*trace, *modules, *tl, kCompareLinesTop)
                             : LinesAtPeak{});
    }
    std::vector<const LinesAtPeak*> pointers;
    for (const LinesAtPeak& l : perRun) pointers.push_back(&l);
    lines_ = compareLines(pointers);

    table_->clear();
    const int runs = int(entries_.size());
    table_->setColumnCount(2 + 2 * runs);
    QStringList headers{QStringLiteral("Line"), QStringLiteral("Module")};
    for (const CompareEntry& e : entries_) headers << e.shownName() << QStringLiteral("#");
    table_->setHorizontalHeaderLabels(headers);
    table_->setRowCount(int(lines_.rows.size()) + 1);
    for (int r = 0; r < int(lines_.rows.size()); ++r) {
        const LineAcrossRuns& l = lines_.rows[size_t(r)];
        table_->setItem(r, 0, cell(toQString(l.label)));
        table_->item(r, 0)->setToolTip(toQString(l.label));
        table_->setItem(r, 1, cell(l.module.empty() ? QStringLiteral("—") : toQString(l.module)));
        for (int k = 0; k < runs; ++k) {
            const int64_t bytes = l.bytes[size_t(k)];
            table_->setItem(
                r, bytesColumn(k),
                cell(bytes ? formatBytes(double(bytes)) : QStringLiteral("—"), qint64(bytes)));
            // The rest's count is not known (a count of lines, not allocations).
            const uint32_t count = l.counts[size_t(k)];
            table_->setItem(r, bytesColumn(k) + 1,
                            cell(count ? QString::number(count) : QString(), count));
        }
    }
    const int last = int(lines_.rows.size());
    table_->setItem(last, 0, cell(QStringLiteral("Peak")));
    table_->setItem(last, 1, cell(QString()));
    for (int k = 0; k < runs; ++k) {
        const int64_t total = lines_.totals[size_t(k)];
        table_->setItem(last, bytesColumn(k), cell(formatBytes(double(total)), qint64(total)));
        table_->setItem(last, bytesColumn(k) + 1, cell(QString()));
    }
    for (int c = 0; c < table_->columnCount(); ++c) {
        QFont f = table_->item(last, c)->font();
        f.setBold(true);
        table_->item(last, c)->setFont(f);
    }
    table_->resizeColumnsToContents();
    // A C++ frame's label runs to hundreds of characters: the column stays
    // readable and the tooltip holds the label whole.
    table_->setColumnWidth(0, std::min(table_->columnWidth(0), kMaxLabelWidth));
    head_->setText(
        runs == 0
            ? QStringLiteral("Compare runs for their bytes by source line.")
            : QStringLiteral("Bytes at each run's peak by the source line that allocated them "
                             "(the innermost frame of the user's code), lines matched by "
                             "function, file name and line; each column adds up to the peak."));
}

QString LineComparePanel::headline() const {
    return head_->text();
}

void LineComparePanel::activateRow(int row) {
    if (row < 0 || size_t(row) >= lines_.rows.size()) return;
    table_->selectRow(row);
    emit highlightRequested(lines_.rows[size_t(row)].intervals);
}

}  // namespace memscope::gui
