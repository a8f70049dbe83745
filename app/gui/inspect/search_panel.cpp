#include "inspect/search_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "inspect/models.h"

namespace memscope::gui {

SearchPanel::SearchPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    query_ = new QLineEdit(this);
    query_->setPlaceholderText(QStringLiteral("Address (0x...) or stack text, Enter to search"));
    query_->setClearButtonEnabled(true);
    layout->addWidget(query_);
    status_ = new QLabel(this);
    layout->addWidget(status_);
    model_ = new AllocationListModel(this);
    view_ = new QTableView(this);
    view_->setModel(model_);
    view_->verticalHeader()->hide();
    view_->horizontalHeader()->setStretchLastSection(true);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    layout->addWidget(view_, 1);
    connect(query_, &QLineEdit::returnPressed, this, [this] { search(query_->text()); });
    connect(view_, &QTableView::activated, this, [this](const QModelIndex& i) {
        if (i.isValid()) emit allocationChosen(model_->intervalAt(i.row()));
    });
    connect(&watcher_, &QFutureWatcher<SearchResult>::finished, this, [this] {
        if (watcher_.isCanceled() || !watcher_.future().isValid()) return;
        if (searched_run_ != run_ || !(searched_ref_ == ref_)) return;
        const SearchResult r = watcher_.result();
        status_->setText(r.total_matches > r.intervals.size()
                             ? QStringLiteral("%1 matches, the %2 largest shown")
                                   .arg(r.total_matches)
                                   .arg(r.intervals.size())
                             : QStringLiteral("%1 matches").arg(r.total_matches));
        const int shown = int(r.intervals.size());
        model_->setAllocations(run_, ref_, r.intervals);
        emit searchFinished(shown, int(r.total_matches));
    });
}

SearchPanel::~SearchPanel() {
    if (cancel_) cancel_->store(true);
    watcher_.waitForFinished();
}

void SearchPanel::setSource(RunPtr run, DeviceRef ref) {
    if (run == run_ && ref == ref_) return;
    if (cancel_) cancel_->store(true);  // its result would belong to the old source
    run_ = std::move(run);
    ref_ = ref;
    model_->setAllocations(nullptr, {}, {});
    status_->clear();
}

void SearchPanel::focusQuery() {
    query_->setFocus();
    query_->selectAll();
}

void SearchPanel::search(const QString& query) {
    if (query_->text() != query) query_->setText(query);
    const DeviceTimeline* tl = run_ ? run_->timeline(ref_) : nullptr;
    const Trace* trace = run_ ? run_->trace(ref_) : nullptr;
    if (!tl || !trace) return;
    if (cancel_) cancel_->store(true);
    watcher_.waitForFinished();
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    searched_run_ = run_;
    searched_ref_ = ref_;
    status_->setText(QStringLiteral("searching…"));
    // The run is captured by value: it outlives the search even if its tab closes.
    watcher_.setFuture(QtConcurrent::run([run = run_, tl, trace, query, cancel = cancel_] {
        return searchAllocations(*trace, *tl, query.toStdString(), 1000, cancel.get());
    }));
}

void SearchPanel::waitForIdle() {
    watcher_.waitForFinished();
}

}  // namespace memscope::gui
