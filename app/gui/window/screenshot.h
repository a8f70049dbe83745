#pragma once
// `memscope --screenshot OUT.png [--compare] [--whatif POLICIES] FILES...`:
// loads, predicts (--whatif), renders the window offscreen with no user
// interaction, saves it and exits. Showing the compare view, it also prints
// the summary table to stdout.

#include "window/app_options.h"

namespace memscope::gui {

int runScreenshot(const AppOptions& options);

}  // namespace memscope::gui
