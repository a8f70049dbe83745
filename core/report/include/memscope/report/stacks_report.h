#pragma once
// The stacks alive at a moment (memscope/analysis/live_stacks.h) as
// `memscope-cli stacks` prints them: folded stacks for flamegraph.pl and
// speedscope, or a short table for a person.

#include <cstddef>
#include <string>

#include "memscope/analysis/live_stacks.h"
#include "memscope/model/trace.h"

namespace memscope {

// One line per distinct stack, root first: "frame;frame;frame BYTES". A ';'
// or a line break inside a frame's text becomes ',' and ' ', so the line
// splits as the readers expect.
std::string toFolded(const LiveStacks& stacks);

// "device 0 at the peak (2.000 s): 12.0 MiB live in 3 stacks", then the
// `top` largest stacks: bytes, count, frames innermost first.
std::string liveStacksText(const Trace& trace, const LiveStacks& stacks, size_t top);

}  // namespace memscope
