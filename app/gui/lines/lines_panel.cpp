#include "lines/lines_panel.h"

#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "common/format.h"

namespace memscope::gui {

namespace {

constexpr int kMaxLabelWidth = 520;  // pixels

// The table's length: the lines beyond it make one row, as `summary
// --by-line` sums them.
constexpr size_t kTopLines = 200;

QTableWidgetItem* cell(const QString& text, QVariant raw = {}) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (raw.isValid()) {
        item->setData(LinesPanel::RawRole, raw);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    return item;
}

}  // namespace

LinesPanel::LinesPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    head_ = new QLabel(this);
    head_->setWordWrap(true);
    head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    clear_ = new QPushButton(QStringLiteral("Clear highlight"), this);
    top->addWidget(head_, 1);
    top->addWidget(clear_, 0, Qt::AlignTop);
    layout->addLayout(top);
    table_ = new QTableWidget(this);
    table_->setColumnCount(ColumnCount);
    table_->setHorizontalHeaderLabels({QStringLiteral("Line"), QStringLiteral("Module"),
                                       QStringLiteral("Bytes"), QStringLiteral("Count"),
                                       QStringLiteral("Share")});
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    layout->addWidget(table_, 1);
    connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) { activateRow(row); });
    connect(clear_, &QPushButton::clicked, this, [this] {
        table_->clearSelection();
        clear_->setEnabled(false);
        if (run_) emit allocationsHighlightRequested(run_, ref_, {});
    });
    clear();
}

void LinesPanel::clear() {
    run_.reset();
    lines_ = {};
    table_->setRowCount(0);
    table_->setVisible(false);
    clear_->setEnabled(false);
    head_->setText(QStringLiteral("Open a run: the source lines holding its peak."));
}

void LinesPanel::setSource(RunPtr run, DeviceRef ref) {
    const Trace* trace = run ? run->trace(ref) : nullptr;
    const DeviceTimeline* tl = run ? run->timeline(ref) : nullptr;
    const ModuleAttribution* modules = run ? run->moduleAttribution(ref) : nullptr;
    if (!trace || !tl || !modules) return clear();
    if (run == run_ && ref == ref_) return;
    run_ = std::move(run);
    ref_ = ref;
    lines_ = linesAtPeak(*trace, *modules, *tl, kTopLines);
    clear_->setEnabled(false);
    const bool rest = lines_.rest_count > 0;
    table_->setRowCount(int(lines_.rows.size()) + (rest ? 1 : 0));
    const double total = std::max<double>(1, double(lines_.total));
    auto fill = [&](int r, const QString& label, const QString& module, int64_t bytes,
                    QVariant count) {
        table_->setItem(r, Line, cell(label));
        table_->setItem(r, Module, cell(module));
        table_->setItem(r, Bytes, cell(formatBytes(double(bytes)), qint64(bytes)));
        table_->setItem(r, Count, cell(count.isValid() ? count.toString() : QString(), count));
        table_->setItem(r, Share,
                        cell(QStringLiteral("%1%").arg(100.0 * double(bytes) / total, 0, 'f', 1),
                             double(bytes) / total));
    };
    int r = 0;
    for (const LineBytes& l : lines_.rows) {
        fill(r, toQString(l.label), l.module.empty() ? QStringLiteral("—") : toQString(l.module),
             l.bytes, l.count);
        table_->item(r, Line)->setToolTip(toQString(l.label));
        ++r;
    }
    // The lines beyond the table: one row, so that the rows add up to the
    // peak; core keeps no allocations for it, so it highlights nothing.
    if (rest)
        fill(r, QStringLiteral("(%1 more lines)").arg(lines_.rest_count), QString(),
             lines_.rest_bytes, {});
    table_->resizeColumnsToContents();
    // A C++ frame's label runs to hundreds of characters: the column stays
    // readable and the tooltip holds the label whole.
    table_->setColumnWidth(Line, std::min(table_->columnWidth(Line), kMaxLabelWidth));
    table_->setVisible(true);
    head_->setText(
        QStringLiteral("%1 — %2: %3 at the peak in %4 source line%5")
            .arg(run_->name, run_->deviceLabel(ref_), formatBytes(double(lines_.total)))
            .arg(lines_.rows.size() + lines_.rest_count)
            .arg(lines_.rows.size() + lines_.rest_count == 1 ? QString() : QStringLiteral("s")));
}

QString LinesPanel::headline() const {
    return head_->text();
}

void LinesPanel::activateRow(int row) {
    if (!run_ || row < 0 || size_t(row) >= lines_.rows.size()) return;
    table_->selectRow(row);
    clear_->setEnabled(true);
    emit allocationsHighlightRequested(run_, ref_, lines_.rows[size_t(row)].intervals);
}

}  // namespace memscope::gui
