#include "compare/allocation_diff_panel.h"

#include <QComboBox>
#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "common/format.h"

namespace memscope::gui {

namespace {

constexpr int kMaxLabelWidth = 520;  // pixels

// A's steps offered in the moment box: enough to reach the interesting
// ones without a box of thousands.
constexpr size_t kMaxSteps = 50;

QString signedBytes(int64_t bytes) {
    return (bytes > 0 ? QStringLiteral("+") : QString()) + formatBytes(double(bytes));
}

QTableWidgetItem* cell(const QString& text, QVariant raw = {}) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (raw.isValid()) {
        item->setData(AllocationDiffPanel::RawRole, raw);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    return item;
}

}  // namespace

AllocationDiffPanel::AllocationDiffPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    candidateBox_ = new QComboBox(this);
    momentBox_ = new QComboBox(this);
    bar->addWidget(new QLabel(QStringLiteral("Against:"), this));
    bar->addWidget(candidateBox_);
    bar->addWidget(new QLabel(QStringLiteral("At:"), this));
    bar->addWidget(momentBox_);
    bar->addStretch(1);
    layout->addLayout(bar);
    head_ = new QLabel(this);
    head_->setWordWrap(true);
    head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(head_);
    table_ = new QTableWidget(this);
    table_->setColumnCount(ColumnCount);
    table_->setHorizontalHeaderLabels({QStringLiteral("Site"), QStringLiteral("Only in A"),
                                       QStringLiteral("#"), QStringLiteral("In both"),
                                       QStringLiteral("#"), QStringLiteral("Only in B"),
                                       QStringLiteral("#"), QStringLiteral("A − B")});
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->horizontalHeader()->setStretchLastSection(false);
    layout->addWidget(table_, 1);
    connect(candidateBox_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0) setCandidate(candidateBox_->itemData(i).toInt());
    });
    connect(momentBox_, &QComboBox::currentIndexChanged, this, [this] { update(); });
    connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (diff_ && size_t(row) < diff_->groups.size())
            activateGroup(row);
        else  // the totals row: nothing in particular
            emit highlightRequested(baseline_, {}, candidate_, {});
    });
}

void AllocationDiffPanel::setEntries(const std::vector<CompareEntry>& entries, int baseline) {
    entries_ = entries;
    baseline_ = baseline;
    const int was = candidate_;
    {
        const QSignalBlocker block(candidateBox_);
        candidateBox_->clear();
        candidate_ = -1;
        for (int i = 0; i < int(entries_.size()); ++i) {
            if (i == baseline_) continue;
            candidateBox_->addItem(entries_[size_t(i)].shownName(), i);
            if (i == was || candidate_ < 0) {
                candidate_ = i;
                candidateBox_->setCurrentIndex(candidateBox_->count() - 1);
            }
        }
    }
    fillMoments();
    update();
}

void AllocationDiffPanel::fillMoments() {
    const QString was = momentBox_->currentData().toString();
    const QSignalBlocker block(momentBox_);
    momentBox_->clear();
    momentBox_->addItem(QStringLiteral("the peaks"), QStringLiteral("peak"));
    const CompareEntry* a =
        size_t(baseline_) < entries_.size() ? &entries_[size_t(baseline_)] : nullptr;
    const DeviceTimeline* tl = a && a->run ? a->run->timeline(a->device) : nullptr;
    if (tl) {
        // A's steps and phases, numbered as core's momentOf finds them (B
        // may lack one: the headline then says so).
        const auto& steps = tl->phase_peaks.by_step;
        for (size_t k = 0; k < steps.size() && k < kMaxSteps; ++k) {
            const int32_t n = steps[k].recorded_step >= 0 ? steps[k].recorded_step : steps[k].index;
            momentBox_->addItem(QStringLiteral("step %1").arg(n), QStringLiteral("step:%1").arg(n));
            for (TrainingPhase p : kAllTrainingPhases)
                if (steps[k].phases[size_t(index(p))])
                    momentBox_->addItem(
                        QStringLiteral("step %1 %2").arg(n).arg(toQString(toString(p))),
                        QStringLiteral("step:%1:%2").arg(n).arg(toQString(toString(p))));
        }
    }
    const int at = momentBox_->findData(was);
    momentBox_->setCurrentIndex(at >= 0 ? at : 0);
}

void AllocationDiffPanel::setCandidate(int index) {
    if (index == baseline_ || index < 0 || size_t(index) >= entries_.size()) return;
    candidate_ = index;
    const int at = candidateBox_->findData(index);
    if (at >= 0 && candidateBox_->currentIndex() != at) {
        const QSignalBlocker block(candidateBox_);
        candidateBox_->setCurrentIndex(at);
    }
    update();
}

void AllocationDiffPanel::setMoment(const QString& moment) {
    const int at = momentBox_->findData(moment);
    if (at >= 0) momentBox_->setCurrentIndex(at);  // update() by the signal
}

void AllocationDiffPanel::update() {
    diff_.reset();
    table_->clearContents();
    table_->setRowCount(0);
    const bool ok = candidate_ >= 0 && size_t(candidate_) < entries_.size() &&
                    size_t(baseline_) < entries_.size();
    const CompareEntry* a = ok ? &entries_[size_t(baseline_)] : nullptr;
    const CompareEntry* b = ok ? &entries_[size_t(candidate_)] : nullptr;
    const Trace* ta = a && a->run ? a->run->trace(a->device) : nullptr;
    const Trace* tb = b && b->run ? b->run->trace(b->device) : nullptr;
    const DeviceTimeline* la = a && a->run ? a->run->timeline(a->device) : nullptr;
    const DeviceTimeline* lb = b && b->run ? b->run->timeline(b->device) : nullptr;
    if (!ta || !tb || !la || !lb) {
        head_->setText(
            QStringLiteral("Compare two runs or more for the allocations one has "
                           "that the other lacks."));
        table_->setVisible(false);
        return;
    }
    auto moment = parseAllocationMoment(momentBox_->currentData().toString().toStdString());
    if (!moment) moment = AllocationMoment{};
    auto diff = diffAllocations(*ta, *la, *tb, *lb, *moment);
    if (!diff) {
        head_->setText(QStringLiteral("%1 against %2: %3")
                           .arg(a->shownName(), b->shownName(), toQString(diff.message())));
        table_->setVisible(false);
        return;
    }
    diff_ = std::move(*diff);
    const AllocationDiff& d = *diff_;
    head_->setText(QStringLiteral("<b>A</b> %1 (%2 live) against <b>B</b> %3 (%4 live) at %5, "
                                  "allocations matched by site, then by size: A − B = %6")
                       .arg(a->shownName().toHtmlEscaped(), formatBytes(double(d.a.live_bytes)),
                            b->shownName().toHtmlEscaped(), formatBytes(double(d.b.live_bytes)),
                            toQString(toString(d.moment)),
                            signedBytes(d.a.live_bytes - d.b.live_bytes)));
    table_->setRowCount(int(d.groups.size()) + 1);
    auto fill = [this](int row, const QString& site, int64_t onlyA, uint32_t onlyACount,
                       int64_t both, uint32_t bothCount, int64_t onlyB, uint32_t onlyBCount) {
        table_->setItem(row, Site, cell(site));
        table_->setItem(row, OnlyA, cell(formatBytes(double(onlyA)), qint64(onlyA)));
        table_->setItem(row, OnlyACount, cell(QString::number(onlyACount), onlyACount));
        table_->setItem(row, Both, cell(formatBytes(double(both)), qint64(both)));
        table_->setItem(row, BothCount, cell(QString::number(bothCount), bothCount));
        table_->setItem(row, OnlyB, cell(formatBytes(double(onlyB)), qint64(onlyB)));
        table_->setItem(row, OnlyBCount, cell(QString::number(onlyBCount), onlyBCount));
        table_->setItem(row, Change, cell(signedBytes(onlyA - onlyB), qint64(onlyA - onlyB)));
    };
    for (int r = 0; r < int(d.groups.size()); ++r) {
        const DiffGroup& g = d.groups[size_t(r)];
        fill(r, toQString(g.site), g.only_a_bytes, g.only_a_count, g.both_bytes, g.both_count,
             g.only_b_bytes, g.only_b_count);
        // The site's frames, outermost first: the label alone may be cut.
        QString frames;
        for (const std::string& f : g.frames) frames += toQString(f) + QLatin1Char('\n');
        table_->item(r, Site)->setToolTip(frames.trimmed());
    }
    const int total = int(d.groups.size());
    fill(total, QStringLiteral("Total"), d.only_a_bytes, d.only_a_count, d.both_bytes, d.both_count,
         d.only_b_bytes, d.only_b_count);
    for (int c = 0; c < ColumnCount; ++c) {
        QFont f = table_->item(total, c)->font();
        f.setBold(true);
        table_->item(total, c)->setFont(f);
    }
    table_->setVisible(true);
    table_->resizeColumnsToContents();
    // A C++ frame's label runs to hundreds of characters: the column stays
    // readable and the tooltip holds the label whole.
    table_->setColumnWidth(Site, std::min(table_->columnWidth(Site), kMaxLabelWidth));
}

QString AllocationDiffPanel::headline() const {
    return head_->text();
}

void AllocationDiffPanel::activateGroup(int group) {
    if (!diff_ || group < 0 || size_t(group) >= diff_->groups.size()) return;
    table_->selectRow(group);
    const DiffGroup& g = diff_->groups[size_t(group)];
    emit highlightRequested(baseline_, g.a_intervals, candidate_, g.b_intervals);
}

}  // namespace memscope::gui
