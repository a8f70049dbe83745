#include "inspect/inspector_view.h"

#include <QCheckBox>
#include <QHeaderView>
#include <QLabel>
#include <QListView>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "common/format.h"
#include "common/module_text.h"
#include "inspect/models.h"
#include "memscope/analysis/allocation_op.h"
#include "memscope/inference/frames.h"
#include "memscope/inference/inference.h"
#include "memscope/model/phases.h"
#include "memscope/view/allocation_search.h"

namespace memscope::gui {

InspectorView::InspectorView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    summary_ =
        new QLabel(QStringLiteral("Click an allocation in the timeline to pin it here."), this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(summary_);
    noise_ = new QCheckBox(QStringLiteral("Show noise frames"), this);
    layout->addWidget(noise_);
    stack_ = new StackFrameModel(this);
    stackView_ = new QListView(this);
    stackView_->setModel(stack_);
    stackView_->setUniformItemSizes(true);
    layout->addWidget(stackView_, 2);
    layout->addWidget(
        new QLabel(QStringLiteral("Neighbours by address when it was allocated:"), this));
    neighbours_ = new AllocationListModel(this);
    neighbourView_ = new QTableView(this);
    neighbourView_->setModel(neighbours_);
    neighbourView_->verticalHeader()->hide();
    neighbourView_->horizontalHeader()->setStretchLastSection(true);
    neighbourView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    layout->addWidget(neighbourView_, 1);

    connect(noise_, &QCheckBox::toggled, this, [this](bool on) {
        stack_->setShowNoise(on);
        updateNoiseLabel();
    });
    connect(neighbourView_, &QTableView::activated, this, [this](const QModelIndex& i) {
        if (i.isValid()) emit neighbourActivated(neighbours_->intervalAt(i.row()));
    });
}

void InspectorView::updateNoiseLabel() {
    noise_->setText(stack_->hiddenCount() > 0
                        ? QStringLiteral("Show noise frames (%1 hidden)").arg(stack_->hiddenCount())
                        : QStringLiteral("Show noise frames"));
}

void InspectorView::clear() {
    summary_->setText(QStringLiteral("Click an allocation in the timeline to pin it here."));
    stack_->setStack(nullptr, {});
    neighbours_->setAllocations(nullptr, {}, {});
}

QString InspectorView::summaryText() const {
    return summary_->text();
}

void InspectorView::setAllocation(RunPtr run, DeviceRef ref, uint32_t interval) {
    const DeviceTimeline* tl = run ? run->timeline(ref) : nullptr;
    const Trace* trace = run ? run->trace(ref) : nullptr;
    if (!tl || !trace || interval >= tl->intervals.size()) return clear();
    const AllocationInterval& a = tl->intervals[interval];
    QStringList lines;
    // The module first: which layer holds it is the question asked first.
    const ModuleAttribution* attribution = run->moduleAttribution(ref);
    const QString module = attribution ? allocationModuleText(*trace, *attribution, a) : QString();
    lines << (module.isEmpty()
                  ? QStringLiteral("module: <i>%1</i>").arg(noModulesMessage().toHtmlEscaped())
                  : QStringLiteral("module: <b>%1</b>").arg(module.toHtmlEscaped()));
    lines << QStringLiteral("<b>%1</b> at %2 (%3)")
                 .arg(formatBytes(double(a.size)), formatAddress(a.address),
                      toQString(toString(a.category)));
    const std::string phase = phasePath(*trace, a.phase);
    const std::string site = siteLabel(*trace, a.stack);
    if (!site.empty())
        lines << QStringLiteral("site: <b>%1</b>").arg(toQString(site).toHtmlEscaped());
    // What made the memory, recorded or inferred from the C++ frames.
    if (const OpAttribution* ops = run->opAttribution(ref))
        if (const auto op = opOfInterval(*ops, a))
            lines << QStringLiteral("op: %1").arg(toQString(opText(*trace, *op)).toHtmlEscaped());
    if (!phase.empty()) lines << QStringLiteral("phase: %1").arg(toQString(phase).toHtmlEscaped());
    // Why this category: recorded, or the inference's rule and evidence.
    lines << QStringLiteral("category: %1")
                 .arg(toQString(explainCategory(*trace, *tl, a)).toHtmlEscaped());
    const QString from = a.alloc_event == kNoEvent ? QStringLiteral("before recording")
                                                   : formatRunTime(*trace, *tl, a.start);
    const QString to = a.free_event == kNoEvent ? QStringLiteral("never freed")
                                                : formatRunTime(*trace, *tl, a.end);
    lines << QStringLiteral("allocated %1, freed %2").arg(from, to);
    if (a.free_event != kNoEvent) {
        const QString life =
            trace->metadata.time_base == TimeBase::EventIndex
                ? QStringLiteral("%1 events").arg(a.end - a.start)
                : QStringLiteral("%1 ms").arg(double(a.end - a.start) * 1e-6, 0, 'f', 3);
        lines << QStringLiteral("lifetime: %1").arg(life);
    }
    summary_->setText(lines.join(QStringLiteral("<br>")));

    // Share the run's trace so the model's pointer outlives a closed tab.
    std::shared_ptr<const Trace> shared(run, trace);
    stack_->setStack(shared, a.stack);
    updateNoiseLabel();

    // The live blocks nearest below and above by address when it was allocated.
    neighbours_->setAllocations(run, ref, neighboursByAddress(*tl, interval));
}

}  // namespace memscope::gui
