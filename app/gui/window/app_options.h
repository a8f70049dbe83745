#pragma once
// The command line: paths to open, --compare, --whatif, --follow PATH,
// --screenshot OUT.png.

#include <QSize>
#include <QStringList>
#include <optional>
#include <vector>

#include "memscope/analysis/alignment.h"
#include "memscope/view/allocation_order.h"
#include "memscope/whatif/whatif.h"

class QCoreApplication;

namespace memscope::gui {

struct AppOptions {
    QStringList paths;
    QStringList follow;  // --follow: traces still being written, followed as they grow
    bool compare = false;
    bool dark = false;       // force a dark palette
    QString screenshot;      // non-empty: render offscreen to this file and exit
    QSize size{1600, 1000};  // screenshot size
    std::optional<memscope::ViewMode> color_by;  // screenshot: view mode (default: the file's)
    std::optional<memscope::AlignMode> align;    // compare screenshot: alignment (default: time)
    QString dock;            // screenshot: the dock to raise, one of dockNames()
    bool whole_run = false;  // screenshot of one run: the whole run, not zoomed to its peak
    QString compare_tab;     // compare screenshot: one of compareTabNames()
    // --whatif: predict these policies (empty: core's default sweep) from the
    // first run opened, and show them in the compare view.
    std::optional<std::vector<memscope::WhatIfPolicy>> whatif;
    QString error;  // non-empty: bad command line
};

AppOptions parseOptions(const QStringList& arguments);
// The compare view's lower tabs by command-line name, in their order.
QStringList compareTabNames();
// The docks --dock can raise.
QStringList dockNames();

}  // namespace memscope::gui
