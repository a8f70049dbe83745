#pragma once
// "Record with this policy": runs `memscope-cli record --apply POLICY --from
// RUN_FILE -o DIR -- COMMAND...` through QProcess, so that a predicted policy
// is measured on the user's own job. The plan (which program, which
// arguments, which folder) is pure and tested on its own; the command line
// comes from the trace through core (recorded_command.h). The recorder
// passes record's output on line by line, cancels by SIGTERM (record
// forwards it to the job) and kills after a grace period, and on success
// names the traces record wrote.

#include <QDateTime>
#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>

#include "loading/run.h"
#include "memscope/base/result.h"

class QTimer;

namespace memscope::gui {

struct ApplyPlan {
    QString program;  // memscope-cli
    QStringList arguments;
    QString out_dir;      // a new folder next to the run file
    QString working_dir;  // where the job runs
    // The trace recorded no working directory: the run file's folder stands in.
    bool working_dir_guessed = false;
    // The command came back split at spaces (the trace keeps no exact argv).
    bool command_split_at_spaces = false;
    QStringList notes;  // what the user should know before it runs, for the dialog
};

// memscope-cli beside this program (an install, a build), else on PATH.
QString memscopeCliProgram();

// Whether `run` can be recorded again: it was recorded by `memscope-cli
// record` (its trace keeps the command) and it is read from a file (--from).
// The error says why not.
Result<void> canRecordAgain(const Run& run);

// The plan for recording `run`'s job again with `policy` applied, into
// "<run file's folder>/applied-<policy>-<now>".
Result<ApplyPlan> planApplyRecord(const Run& run, const QString& policy, const QString& program,
                                  const QDateTime& now);

class ApplyRecorder : public QObject {
    Q_OBJECT
public:
    explicit ApplyRecorder(QObject* parent = nullptr);
    ~ApplyRecorder() override;  // a running job is terminated, then killed

    // Makes the output folder and starts; false (and failed) when it cannot.
    bool start(const ApplyPlan& plan);
    bool isRunning() const;
    // SIGTERM now, SIGKILL after the grace period if it has not ended.
    void cancel();
    void setGracePeriod(int ms) { graceMs_ = ms; }
    // The last lines record printed (stdout and stderr together).
    QStringList lastLines() const { return lines_; }
    const ApplyPlan& plan() const { return plan_; }

signals:
    void outputLine(const QString& line);
    // The *.memscope traces record wrote into the plan's out_dir.
    void succeeded(const QStringList& traces);
    // What went wrong, with record's last lines; cancelled when the user asked.
    void failed(const QString& message, bool cancelled);

private:
    void readOutput();
    void onFinished(int code, QProcess::ExitStatus status);
    void onError(QProcess::ProcessError error);

    ApplyPlan plan_;
    QPointer<QProcess> process_;
    QTimer* killTimer_ = nullptr;
    QString partial_;  // a line not yet ended
    QStringList lines_;
    int graceMs_ = 10000;
    bool cancelled_ = false;
};

}  // namespace memscope::gui
