#include "window/recent_files.h"

#include <QFileInfo>
#include <QSettings>

namespace memscope::gui {

namespace {
constexpr int kMax = 12;
QString key() {
    return QStringLiteral("recentFiles");
}
}  // namespace

QStringList recentFiles() {
    return QSettings().value(key()).toStringList();
}

void addRecentFiles(const QStringList& paths) {
    QStringList list = recentFiles();
    for (const QString& p : paths) {
        const QString abs = QFileInfo(p).absoluteFilePath();
        list.removeAll(abs);
        list.prepend(abs);
    }
    while (list.size() > kMax) list.removeLast();
    QSettings().setValue(key(), list);
}

void clearRecentFiles() {
    QSettings().remove(key());
}

}  // namespace memscope::gui
