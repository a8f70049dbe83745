#pragma once
// The trainer's layers: its recorded `block k` phases as modules.

#include "memscope/model/trace.h"

namespace memscope::detail {

// Module "block k" per block index of the trace's recorded Block phases (and
// recompute phases naming a block), one scope per phase; source Recorded.
// Returns false, changing nothing, where the trace has no such phases.
// Whether the trace has recorded block phases, which modulesFromBlockPhases
// makes modules of.
bool hasBlockPhases(const Trace& trace);
bool modulesFromBlockPhases(Trace& trace);

}  // namespace memscope::detail
