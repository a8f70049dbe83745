#include "loading/apply_recorder.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QTimer>

#include "common/format.h"
#include "loading/whatif_runner.h"
#include "memscope/recording/recorded_command.h"

namespace memscope::gui {

namespace {

constexpr int kKeptLines = 12;  // record's last lines, shown when it fails

// The trace and file a run is recorded again from: its what-if part.
const RunPart* sourcePart(const Run& run) {
    return whatIfPart(run);
}

}  // namespace

QString memscopeCliProgram() {
    const QString beside =
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("memscope-cli"));
    return QFileInfo(beside).isExecutable() ? beside : QStringLiteral("memscope-cli");
}

Result<void> canRecordAgain(const Run& run) {
    const RunPart* part = sourcePart(run);
    if (!part) return makeError("the run holds no trace");
    if (part->trace->prediction) return makeError("the run is a prediction, not a recorded run");
    auto command = recordedCommand(part->trace->metadata);
    if (!command.ok()) return command.error();
    if (part->path.isEmpty() || !QFileInfo(part->path).exists())
        return makeError("the run is not read from a file, which record --apply --from needs");
    return {};
}

Result<ApplyPlan> planApplyRecord(const Run& run, const QString& policy, const QString& program,
                                  const QDateTime& now) {
    if (auto ok = canRecordAgain(run); !ok.ok()) return ok.error();
    if (policy.isEmpty()) return makeError("no policy to apply");
    const RunPart& part = *sourcePart(run);
    auto command = recordedCommand(part.trace->metadata);
    if (!command.ok()) return command.error();
    const QFileInfo file(part.path);
    const QString folder = file.absoluteDir().path();
    ApplyPlan plan;
    plan.program = program;
    plan.out_dir = QDir(folder).filePath(toQString(appliedRunFolderName(
        policy.toStdString(), now.toString(QStringLiteral("yyyyMMdd-HHmmss")).toStdString())));
    const auto args =
        recordApplyArguments(policy.toStdString(), file.absoluteFilePath().toStdString(),
                             plan.out_dir.toStdString(), command->argv);
    for (const std::string& a : args) plan.arguments << toQString(a);
    if (command->working_dir) {
        plan.working_dir = toQString(*command->working_dir);
    } else {
        plan.working_dir = folder;
        plan.working_dir_guessed = true;
        plan.notes << QStringLiteral(
                          "The run does not record the folder its command ran in: it runs in "
                          "the run file's folder, %1.")
                          .arg(folder);
    }
    if (!command->exact) {
        plan.command_split_at_spaces = true;
        plan.notes << QStringLiteral(
            "The run keeps its command as one line: it is split at spaces, so an argument that "
            "held a space is passed as two.");
    }
    return plan;
}

ApplyRecorder::ApplyRecorder(QObject* parent) : QObject(parent) {
    killTimer_ = new QTimer(this);
    killTimer_->setSingleShot(true);
    connect(killTimer_, &QTimer::timeout, this, [this] {
        if (isRunning()) process_->kill();
    });
}

ApplyRecorder::~ApplyRecorder() {
    if (!isRunning()) return;
    // The dialog is closing: the job must not outlive it unseen.
    disconnect(process_.data(), nullptr, this, nullptr);
    process_->terminate();
    if (!process_->waitForFinished(graceMs_)) {
        process_->kill();
        process_->waitForFinished(2000);
    }
}

bool ApplyRecorder::isRunning() const {
    return process_ && process_->state() != QProcess::NotRunning;
}

bool ApplyRecorder::start(const ApplyPlan& plan) {
    if (isRunning()) return false;
    plan_ = plan;
    lines_.clear();
    partial_.clear();
    cancelled_ = false;
    if (!QDir().mkpath(plan.out_dir)) {
        emit failed(QStringLiteral("Cannot make the folder %1 for the run.").arg(plan.out_dir),
                    false);
        return false;
    }
    if (process_) process_->deleteLater();
    auto* process = new QProcess(this);
    process_ = process;
    process->setProcessChannelMode(QProcess::MergedChannels);
    process->setWorkingDirectory(plan.working_dir);
    connect(process, &QProcess::readyReadStandardOutput, this, &ApplyRecorder::readOutput);
    connect(process, &QProcess::finished, this, &ApplyRecorder::onFinished);
    connect(process, &QProcess::errorOccurred, this, &ApplyRecorder::onError);
    process->start(plan.program, plan.arguments);
    return true;
}

void ApplyRecorder::cancel() {
    if (!isRunning()) return;
    cancelled_ = true;
    process_->terminate();
    killTimer_->start(graceMs_);
}

void ApplyRecorder::readOutput() {
    if (!process_) return;
    partial_ += QString::fromLocal8Bit(process_->readAllStandardOutput());
    // Progress lines end in "\r" on a terminal; either ends a line here.
    static const QRegularExpression lineEnd(QStringLiteral("[\r\n]"));
    qsizetype end;
    while ((end = partial_.indexOf(lineEnd)) >= 0) {
        const QString line = partial_.left(end).trimmed();
        partial_.remove(0, end + 1);
        if (line.isEmpty()) continue;
        lines_ << line;
        while (lines_.size() > kKeptLines) lines_.removeFirst();
        emit outputLine(line);
    }
}

void ApplyRecorder::onFinished(int code, QProcess::ExitStatus status) {
    killTimer_->stop();
    readOutput();
    if (!partial_.trimmed().isEmpty()) {
        lines_ << partial_.trimmed();
        emit outputLine(partial_.trimmed());
        partial_.clear();
    }
    if (cancelled_) {
        emit failed(QStringLiteral("Recording cancelled."), true);
        return;
    }
    const QString tail = lines_.join(QLatin1Char('\n'));
    if (status != QProcess::NormalExit || code != 0) {
        emit failed(QStringLiteral("memscope-cli record %1. Its last lines:\n%2")
                        .arg(status != QProcess::NormalExit
                                 ? QStringLiteral("crashed")
                                 : QStringLiteral("failed (exit status %1)").arg(code),
                             tail.isEmpty() ? QStringLiteral("(none)") : tail),
                    false);
        return;
    }
    QStringList traces;
    for (const QFileInfo& f :
         QDir(plan_.out_dir).entryInfoList({QStringLiteral("*.memscope")}, QDir::Files, QDir::Name))
        traces << f.filePath();
    if (traces.isEmpty()) {
        emit failed(QStringLiteral("memscope-cli record ended but wrote no trace in %1. Its last "
                                   "lines:\n%2")
                        .arg(plan_.out_dir, tail),
                    false);
        return;
    }
    emit succeeded(traces);
}

void ApplyRecorder::onError(QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;  // the rest end in finished()
    emit failed(QStringLiteral("Cannot run %1: %2. memscope-cli is looked for beside this "
                               "program, then on PATH.")
                    .arg(plan_.program, process_ ? process_->errorString() : QString()),
                false);
}

}  // namespace memscope::gui
