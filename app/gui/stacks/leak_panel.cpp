#include "stacks/leak_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "common/format.h"

namespace memscope::gui {

namespace {

constexpr int kDeviceRole = Qt::UserRole;
constexpr int kGroupRole = Qt::UserRole + 1;

}  // namespace

LeakPanel::LeakPanel(QWidget* parent) : QWidget(parent) {
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
    tree_ = new QTreeWidget(this);
    tree_->setColumnCount(5);
    tree_->setHeaderLabels({QStringLiteral("Module / device"), QStringLiteral("Site"),
                            QStringLiteral("Bytes/step"), QStringLiteral("Count/step"),
                            QStringLiteral("First step")});
    tree_->setRootIsDecorated(true);
    tree_->header()->setStretchLastSection(false);
    tree_->setUniformRowHeights(true);
    tree_->setSelectionMode(QAbstractItemView::SingleSelection);
    layout->addWidget(tree_, 1);
    connect(tree_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item, int) {
        const QVariant g = item->data(0, kGroupRole);
        if (g.isValid()) activateGroup(item->data(0, kDeviceRole).toInt(), g.toInt());
    });
    connect(clear_, &QPushButton::clicked, this, [this] {
        tree_->clearSelection();
        clear_->setEnabled(false);
        if (run_) emit allocationsHighlightRequested(run_, {part_, 0}, {});
    });
    clear();
}

void LeakPanel::clear() {
    run_.reset();
    report_ = {};
    tree_->clear();
    tree_->setVisible(false);
    clear_->setEnabled(false);
    head_->setText(QStringLiteral("Open a run: what grows step after step."));
}

void LeakPanel::setSource(RunPtr run, DeviceRef ref) {
    const Trace* trace = run ? run->trace(ref) : nullptr;
    const ModuleAttribution* modules = run ? run->moduleAttribution(ref) : nullptr;
    if (!trace || !modules || size_t(ref.part) >= run->parts.size()) return clear();
    if (run == run_ && ref.part == part_) return;
    run_ = std::move(run);
    part_ = ref.part;
    report_ = findLeaks(*trace, *run_->parts[size_t(part_)].timeline, *modules);
    clear_->setEnabled(false);
    tree_->clear();
    size_t growing = 0;
    for (int d = 0; d < int(report_.devices.size()); ++d) {
        const DeviceGrowth& g = report_.devices[size_t(d)];
        growing += g.grows;
        auto* item = new QTreeWidgetItem(tree_, {deviceText(d)});
        item->setFirstColumnSpanned(true);
        for (int k = 0; k < int(g.groups.size()); ++k) {
            const LeakGroup& lg = g.groups[size_t(k)];
            auto* row = new QTreeWidgetItem(
                item, {lg.module.empty() ? QStringLiteral("—") : QString::fromStdString(lg.module),
                       QString::fromStdString(lg.site), formatBytes(lg.bytes_per_step),
                       QString::number(lg.count_per_step, 'g', 3), QString::number(lg.first_step)});
            row->setData(0, kDeviceRole, d);
            row->setData(0, kGroupRole, k);
            QString frames;
            for (const std::string& f : lg.frames)
                frames += QString::fromStdString(f) + QLatin1Char('\n');
            row->setToolTip(1, frames.trimmed());
            for (int c : {2, 3, 4}) row->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
        }
    }
    tree_->expandAll();
    for (int c = 1; c < 5; ++c) tree_->resizeColumnToContents(c);
    tree_->setVisible(true);
    head_->setText(
        QStringLiteral("%1: %2 of %3 device%4 grow step after step%5")
            .arg(run_->name, QString::number(growing), QString::number(report_.devices.size()),
                 report_.devices.size() == 1 ? QString() : QStringLiteral("s"),
                 report_.steps_inferred ? QStringLiteral(" (steps inferred)") : QString()));
}

QString LeakPanel::headline() const {
    return head_->text();
}

QString LeakPanel::deviceText(int device) const {
    if (!run_ || device < 0 || size_t(device) >= report_.devices.size()) return {};
    const DeviceGrowth& g = report_.devices[size_t(device)];
    return QStringLiteral("%1: %2%3")
        .arg(run_->deviceLabel({part_, device}), QString::fromStdString(growthText(g)),
             report_.steps_inferred ? QStringLiteral(" (steps inferred)") : QString());
}

void LeakPanel::activateGroup(int device, int group) {
    if (!run_ || device < 0 || size_t(device) >= report_.devices.size()) return;
    const DeviceGrowth& g = report_.devices[size_t(device)];
    if (group < 0 || size_t(group) >= g.groups.size()) return;
    if (QTreeWidgetItem* top = tree_->topLevelItem(device))
        if (QTreeWidgetItem* row = top->child(group)) tree_->setCurrentItem(row);
    clear_->setEnabled(true);
    emit allocationsHighlightRequested(run_, {part_, device}, g.groups[size_t(group)].intervals);
}

}  // namespace memscope::gui
