#pragma once
// The command line: paths to open, --compare, --screenshot OUT.png.

#include <QSize>
#include <QStringList>

class QCoreApplication;

namespace memscope::gui {

struct AppOptions {
    QStringList paths;
    bool compare = false;
    bool dark = false;       // force a dark palette
    QString screenshot;      // non-empty: render offscreen to this file and exit
    QSize size{1600, 1000};  // screenshot size
    QString error;           // non-empty: bad command line
};

AppOptions parseOptions(const QStringList& arguments);

}  // namespace memscope::gui
