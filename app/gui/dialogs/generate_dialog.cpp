#include "dialogs/generate_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>

namespace memscope::gui {

namespace {
const char* const kPolicies[] = {"full", "block", "selective", "opt-in-bwd"};
}

GenerateDialog::GenerateDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(QStringLiteral("Generate traces"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    model_ = new QComboBox(this);
    model_->addItems({QStringLiteral("mlp"), QStringLiteral("gpt")});
    preset_ = new QComboBox(this);
    preset_->setEditable(true);
    preset_->addItems({QStringLiteral("quick"), QStringLiteral("paper")});
    device_ = new QComboBox(this);
    device_->setEditable(true);
    device_->addItems({QStringLiteral("cpu"), QStringLiteral("cuda")});
    auto* policyRow = new QHBoxLayout;
    for (const char* p : kPolicies) {
        auto* box = new QCheckBox(QLatin1String(p), this);
        box->setChecked(true);
        policies_ << box;
        policyRow->addWidget(box);
    }
    // A sweep runs every policy the trainer knows, alone and with opt-in-bwd,
    // and marks the memory/time frontier (the compare view's policy map).
    sweep_ = new QCheckBox(QStringLiteral("sweep every policy"), this);
    sweep_->setToolTip(QStringLiteral(
        "full, block, selective, sqrt, segments:K, save:OPS, each alone and with +opt-in-bwd"));
    policyRow->addWidget(sweep_);
    connect(sweep_, &QCheckBox::toggled, this, [this](bool on) {
        for (QCheckBox* b : policies_) b->setEnabled(!on);
    });
    auto* dirRow = new QHBoxLayout;
    outDir_ = new QLineEdit(QDir(QStandardPaths::writableLocation(QStandardPaths::TempLocation))
                                .filePath(QStringLiteral("memscope-runs")),
                            this);
    auto* browse = new QPushButton(QStringLiteral("Browse…"), this);
    dirRow->addWidget(outDir_, 1);
    dirRow->addWidget(browse);
    form->addRow(QStringLiteral("Model:"), model_);
    form->addRow(QStringLiteral("Preset:"), preset_);
    form->addRow(QStringLiteral("Policies:"), policyRow);
    form->addRow(QStringLiteral("Device:"), device_);
    form->addRow(QStringLiteral("Output folder:"), dirRow);
    layout->addLayout(form);
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    layout->addWidget(progress_);
    log_ = new QPlainTextEdit(this);
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(2000);
    log_->setMinimumHeight(160);
    layout->addWidget(log_, 1);
    auto* buttons = new QDialogButtonBox(this);
    run_ = buttons->addButton(QStringLiteral("Run"), QDialogButtonBox::AcceptRole);
    cancel_ = buttons->addButton(QStringLiteral("Cancel run"), QDialogButtonBox::RejectRole);
    buttons->addButton(QDialogButtonBox::Close);
    cancel_->setEnabled(false);
    layout->addWidget(buttons);

    connect(browse, &QPushButton::clicked, this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, QStringLiteral("Output folder"),
                                                            outDir_->text());
        if (!d.isEmpty()) outDir_->setText(d);
    });
    connect(run_, &QPushButton::clicked, this, &GenerateDialog::startRun);
    connect(cancel_, &QPushButton::clicked, this, &GenerateDialog::cancelRun);
    connect(buttons, &QDialogButtonBox::rejected, this, [this] {
        if (process_.state() == QProcess::NotRunning) reject();
    });
    connect(buttons->button(QDialogButtonBox::Close), &QPushButton::clicked, this, [this] {
        cancelRun();
        reject();
    });
    process_.setProcessChannelMode(QProcess::MergedChannels);
    connect(&process_, &QProcess::readyReadStandardOutput, this, &GenerateDialog::readOutput);
    connect(&process_, &QProcess::finished, this, &GenerateDialog::onFinished);
    connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) {
            log_->appendPlainText(QStringLiteral("could not start %1: %2")
                                      .arg(process_.program(), process_.errorString()));
            run_->setEnabled(true);
            cancel_->setEnabled(false);
            progress_->setRange(0, 1);
        }
    });
    if (trainerPath().isEmpty()) {
        log_->appendPlainText(
            QStringLiteral("memscope-train was not found next to memscope (%1). Build it with "
                           "-DMEMSCOPE_BUILD_TRAINER=ON (needs LibTorch).")
                .arg(QCoreApplication::applicationDirPath()));
        run_->setEnabled(false);
    }
}

GenerateDialog::~GenerateDialog() {
    if (process_.state() != QProcess::NotRunning) {
        process_.kill();
        process_.waitForFinished(2000);
    }
}

QString GenerateDialog::trainerPath() {
    const QString env = qEnvironmentVariable("MEMSCOPE_TRAIN");
    if (!env.isEmpty() && QFileInfo(env).isExecutable()) return env;
    const QString p =
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("memscope-train"));
    return QFileInfo(p).isExecutable() ? p : QString();
}

void GenerateDialog::setSweep(bool on) {
    sweep_->setChecked(on);
}

void GenerateDialog::setOutputFolder(const QString& dir) {
    outDir_->setText(dir);
}

QStringList GenerateDialog::arguments() const {
    QStringList chosen;
    for (QCheckBox* b : policies_)
        if (b->isChecked()) chosen << b->text();
    const QString policy = sweep_->isChecked()                 ? QStringLiteral("sweep")
                           : chosen.size() == policies_.size() ? QStringLiteral("all")
                                                               : chosen.join(QLatin1Char(','));
    QStringList args{QStringLiteral("--model"),  model_->currentText(),
                     QStringLiteral("--policy"), policy,
                     QStringLiteral("--preset"), preset_->currentText(),
                     QStringLiteral("--out"),    outDir_->text()};
    if (device_->currentText() != QLatin1String("cpu"))
        args << QStringLiteral("--device") << device_->currentText();
    return args;
}

void GenerateDialog::startRun() {
    if (process_.state() != QProcess::NotRunning) return;
    QDir().mkpath(outDir_->text());
    log_->clear();
    startedAt_ = QDateTime::currentDateTime().addSecs(-1);
    runs_ = 1;
    progress_->setRange(0, 0);  // busy until the trainer announces its first policy
    progress_->setValue(0);
    run_->setEnabled(false);
    cancel_->setEnabled(true);
    log_->appendPlainText(
        QStringLiteral("$ memscope-train %1").arg(arguments().join(QLatin1Char(' '))));
    process_.start(trainerPath(), arguments());
}

void GenerateDialog::cancelRun() {
    if (process_.state() == QProcess::NotRunning) return;
    log_->appendPlainText(QStringLiteral("cancelling…"));
    process_.terminate();
    // A trainer stuck in a long op gets killed after a grace period.
    QTimer::singleShot(3000, &process_, [this] {
        if (process_.state() != QProcess::NotRunning) process_.kill();
    });
}

void GenerateDialog::readOutput() {
    // memscope-train announces each policy ("memscope-train: mlp-full ..."):
    // progress counts policies started.
    // It first says how many runs follow ("memscope-train: 16 runs").
    static const QRegularExpression started(QStringLiteral("^memscope-train: \\S+ \\.\\.\\.$"));
    static const QRegularExpression count(QStringLiteral("^memscope-train: (\\d+) runs?$"));
    while (process_.canReadLine()) {
        const QString line = QString::fromUtf8(process_.readLine()).trimmed();
        log_->appendPlainText(line);
        if (const auto m = count.match(line); m.hasMatch()) {
            runs_ = std::max(1, m.captured(1).toInt());
        } else if (started.match(line).hasMatch()) {
            progress_->setRange(0, runs_);
            progress_->setValue(std::min(progress_->value() + 1, progress_->maximum()));
        }
    }
}

void GenerateDialog::onFinished(int code, QProcess::ExitStatus status) {
    readOutput();
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    progress_->setRange(0, 1);
    progress_->setValue(status == QProcess::NormalExit && code == 0 ? 1 : 0);
    if (status != QProcess::NormalExit || code != 0) {
        log_->appendPlainText(QStringLiteral("memscope-train stopped (exit code %1).").arg(code));
        return;
    }
    QStringList traces;
    for (const QFileInfo& fi :
         QDir(outDir_->text())
             .entryInfoList({QStringLiteral("*.memscope")}, QDir::Files, QDir::Name))
        if (fi.lastModified() >= startedAt_) traces << fi.filePath();
    log_->appendPlainText(QStringLiteral("%1 traces written.").arg(traces.size()));
    if (!traces.isEmpty()) {
        emit tracesReady(traces);
        accept();
    }
}

}  // namespace memscope::gui
