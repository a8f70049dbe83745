#include "dialogs/attach_dialog.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFormLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cerrno>
#include <csignal>

namespace memscope::gui {

namespace {

bool alive(qint64 pid) {
    return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM);
}

QString commandOf(qint64 pid) {
    QFile f(QStringLiteral("/proc/%1/cmdline").arg(pid));
    if (!f.open(QIODevice::ReadOnly)) return {};
    QByteArray raw = f.read(4096);
    raw.replace('\0', ' ');
    return QString::fromLocal8Bit(raw).trimmed();
}

}  // namespace

std::vector<AttachableProcess> attachableProcesses() {
    std::vector<AttachableProcess> out;
    const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
    if (!runtime.startsWith(QLatin1Char('/'))) return out;
    const QDir folder(runtime + QStringLiteral("/memscope"));
    for (const QString& name :
         folder.entryList({QStringLiteral("*.sock")}, QDir::System | QDir::Files)) {
        bool ok = false;
        const qint64 pid = name.chopped(5).toLongLong(&ok);
        if (!ok || !alive(pid)) continue;
        out.push_back({pid, commandOf(pid)});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
    return out;
}

AttachDialog::AttachDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(QStringLiteral("Attach to a running job"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(
        QStringLiteral("Processes started with <tt>memscope-cli record --idle</tt> (or made "
                       "attachable from Python). Attaching records the next whole steps of "
                       "the job, then opens the traces."),
        this));
    list_ = new QListWidget(this);
    layout->addWidget(list_, 1);
    auto* form = new QFormLayout;
    steps_ = new QSpinBox(this);
    steps_->setRange(1, 1000);
    steps_->setValue(2);
    form->addRow(QStringLiteral("Steps to record:"), steps_);
    layout->addLayout(form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    attach_ = buttons->button(QDialogButtonBox::Ok);
    attach_->setText(QStringLiteral("Attach"));
    auto* again = buttons->addButton(QStringLiteral("Refresh"), QDialogButtonBox::ActionRole);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(again, &QPushButton::clicked, this, &AttachDialog::refresh);
    connect(list_, &QListWidget::currentRowChanged, this,
            [this] { attach_->setEnabled(selectedPid() >= 0); });
    refresh();
}

void AttachDialog::refresh() {
    list_->clear();
    for (const AttachableProcess& p : attachableProcesses()) {
        auto* item = new QListWidgetItem(QStringLiteral("%1  %2").arg(p.pid).arg(p.command), list_);
        item->setData(Qt::UserRole, p.pid);
    }
    if (list_->count() == 0) {
        auto* item = new QListWidgetItem(
            QStringLiteral("No attachable job (start one with memscope-cli record --idle)"), list_);
        item->setFlags(Qt::NoItemFlags);
        list_->setCurrentRow(-1);
    } else {
        list_->setCurrentRow(0);
    }
    attach_->setEnabled(selectedPid() >= 0);
}

int AttachDialog::jobCount() const {
    int n = 0;
    for (int i = 0; i < list_->count(); ++i) n += list_->item(i)->data(Qt::UserRole).isValid();
    return n;
}

qint64 AttachDialog::selectedPid() const {
    const QListWidgetItem* item = list_->currentItem();
    return item && item->data(Qt::UserRole).isValid() ? item->data(Qt::UserRole).toLongLong() : -1;
}

int AttachDialog::steps() const {
    return steps_->value();
}

}  // namespace memscope::gui
