#pragma once
// Stack frames as people read them: one rule for which frames are noise (the
// unwinder, CPython's call machinery, dispatcher glue, as memory_viz filters
// them), and their text. The GUI's hover and inspector, the CLI and the
// search all use it.

#include <string>
#include <vector>

#include "memscope/trace.h"

namespace memscope {

bool isNoiseFrame(const Trace& trace, FrameId id);

// "name (file:line)", "??" for a frame without a name, "?" for a bad id.
std::string frameText(const Trace& trace, FrameId id);

// Up to `max` frames of a stack, noise left out, innermost first.
std::vector<FrameId> visibleFrames(const Trace& trace, StackId stack, size_t max);

}  // namespace memscope
