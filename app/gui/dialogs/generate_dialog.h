#pragma once
// Runs the built-in trainer (memscope-train, next to the memscope binary) as a
// child process with progress and Cancel, then hands its traces to the caller
// to open in the compare view. The GUI never blocks on the child.

#include <QDateTime>
#include <QDialog>
#include <QProcess>

class QCheckBox;
class QComboBox;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace memscope::gui {

class GenerateDialog : public QDialog {
    Q_OBJECT
public:
    explicit GenerateDialog(QWidget* parent = nullptr);
    ~GenerateDialog() override;

    // memscope-train next to the memscope binary, or $MEMSCOPE_TRAIN; "" if
    // neither is an executable.
    static QString trainerPath();
    QStringList arguments() const;  // for the current choices
    void setSweep(bool on);         // every policy, alone and with +opt-in-bwd
    void setOutputFolder(const QString& dir);
    void start() { startRun(); }
    bool isRunning() const { return process_.state() != QProcess::NotRunning; }

signals:
    void tracesReady(const QStringList& paths);

private:
    void startRun();
    void cancelRun();
    void readOutput();
    void onFinished(int code, QProcess::ExitStatus status);

    QComboBox* model_ = nullptr;
    QComboBox* preset_ = nullptr;
    QComboBox* device_ = nullptr;
    QList<QCheckBox*> policies_;
    QCheckBox* sweep_ = nullptr;
    int runs_ = 1;  // announced by the trainer
    QLineEdit* outDir_ = nullptr;
    QPlainTextEdit* log_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QProcess process_;
    QDateTime startedAt_;
};

}  // namespace memscope::gui
