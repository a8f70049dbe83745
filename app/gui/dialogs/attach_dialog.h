#pragma once
// Record → Attach to a running job…: the jobs started with
// `memscope-cli record --idle` (or made attachable from Python) that this
// user can attach to, found by their control sockets ($XDG_RUNTIME_DIR/
// memscope/PID.sock, docs/USER_GUIDE.md), and how many steps to record. The
// attaching itself is `memscope-cli attach PID --steps N`, run by the window.

#include <QDialog>
#include <QString>
#include <vector>

class QListWidget;
class QPushButton;
class QSpinBox;

namespace memscope::gui {

struct AttachableProcess {
    qint64 pid = -1;
    QString command;  // its command line, as /proc says
};

// The processes with a control socket in $XDG_RUNTIME_DIR/memscope that are
// still running, by pid.
std::vector<AttachableProcess> attachableProcesses();

class AttachDialog : public QDialog {
    Q_OBJECT
public:
    explicit AttachDialog(QWidget* parent = nullptr);

    void refresh();
    int jobCount() const;
    qint64 selectedPid() const;  // -1: none
    int steps() const;

private:
    QListWidget* list_ = nullptr;
    QSpinBox* steps_ = nullptr;
    QPushButton* attach_ = nullptr;
};

}  // namespace memscope::gui
