#pragma once
// Which phase each event happened in, from time alone: for traces whose phases
// were recorded apart from the events (the Python hook's phases, merged with
// the allocator's history and CUPTI's records).

#include "memscope/model/trace.h"

namespace memscope {

// Sets Event::phase to the innermost phase whose [start, end) holds the
// event's time (a phase with end == start is open to the end of the trace);
// innermost = the latest-starting one, the deeper one on a tie. Events must be
// in time order. Events outside every phase get phase 0.
void assignInnermostPhases(Trace& trace);

// Sets Phase::parent to the innermost phase that contains it in time, for
// phases added without parents; phases must not partially overlap to nest.
void nestPhasesByTime(Trace& trace);

}  // namespace memscope
