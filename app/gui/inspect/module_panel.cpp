#include "inspect/module_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "common/format.h"
#include "common/module_text.h"
#include "inspect/module_table_model.h"

namespace memscope::gui {

namespace {

QString groupingText(ModuleGroupingSpec spec) {
    switch (spec.by) {
        case ModuleGrouping::Layer:
            return QStringLiteral("by layer");
        case ModuleGrouping::Depth:
            return QStringLiteral("at depth %1").arg(spec.depth);
        case ModuleGrouping::Exact:
            return QStringLiteral("by exact module");
    }
    return {};
}

}  // namespace

ModulePanel::ModulePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    head_ = new QLabel(this);
    head_->setWordWrap(true);
    head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    clear_ = new QPushButton(QStringLiteral("Clear highlight"), this);
    clear_->setEnabled(false);
    top->addWidget(head_, 1);
    top->addWidget(clear_, 0, Qt::AlignTop);
    layout->addLayout(top);
    model_ = new ModuleTableModel(this);
    view_ = new QTableView(this);
    view_->setModel(model_);
    view_->verticalHeader()->hide();
    view_->horizontalHeader()->setStretchLastSection(true);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    layout->addWidget(view_, 1);
    connect(view_, &QTableView::clicked, this, [this](const QModelIndex& i) {
        if (i.isValid()) activateRow(i.row());
    });
    connect(clear_, &QPushButton::clicked, this, [this] {
        view_->clearSelection();
        clear_->setEnabled(false);
        emit moduleHighlightRequested(std::nullopt);
    });
    clear();
}

void ModulePanel::clear() {
    run_.reset();
    model_->setBreakdown({});
    head_->setText(QStringLiteral("Open a run: its memory at the peak, by module."));
    view_->setVisible(false);
    clear_->setEnabled(false);
}

void ModulePanel::setSource(RunPtr run, DeviceRef ref, ModuleGroupingSpec spec) {
    const DeviceTimeline* tl = run ? run->timeline(ref) : nullptr;
    const Trace* trace = run ? run->trace(ref) : nullptr;
    const ModuleAttribution* attribution = run ? run->moduleAttribution(ref) : nullptr;
    if (!tl || !trace || !attribution) return clear();
    run_ = std::move(run);
    ref_ = ref;
    spec_ = spec;
    clear_->setEnabled(false);
    ModuleBreakdown b = modulesAtPeak(*trace, *attribution, *tl, spec);
    if (b.source == ModuleSource::None) {
        model_->setBreakdown({});
        head_->setText(noModulesMessage());
        view_->setVisible(false);
        return;
    }
    head_->setText(QStringLiteral("At the peak of %1 (%2, %3), %4%5")
                       .arg(run_->deviceLabel(ref_), formatBytes(double(tl->peak.bytes)),
                            formatRunTime(*trace, *tl, tl->peak.time), groupingText(spec),
                            b.source == ModuleSource::Inferred
                                ? QStringLiteral(", modules inferred")
                                : QStringLiteral(", modules recorded")));
    model_->setBreakdown(std::move(b));
    view_->setVisible(true);
    view_->resizeColumnsToContents();
}

QString ModulePanel::headline() const {
    return head_->text();
}

bool ModulePanel::showsTable() const {
    return !view_->isHidden();
}

void ModulePanel::activateRow(int row) {
    if (row < 0 || row >= model_->rowCount()) return;
    view_->selectRow(row);
    clear_->setEnabled(true);
    emit moduleHighlightRequested(model_->moduleAt(row));
}

}  // namespace memscope::gui
