#pragma once
// The recent-files list, kept in QSettings.

#include <QStringList>

namespace memscope::gui {

QStringList recentFiles();
void addRecentFiles(const QStringList& paths);
void clearRecentFiles();

}  // namespace memscope::gui
