#pragma once
// `memscope --screenshot OUT.png [--compare] FILES...`: loads, renders the
// window offscreen with no user interaction, saves it and exits. With
// --compare it also prints the summary table to stdout.

#include "window/app_options.h"

namespace memscope::gui {

int runScreenshot(const AppOptions& options);

}  // namespace memscope::gui
