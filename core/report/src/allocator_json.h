#pragma once
// The allocator model's figures as the JSON reports write them (summary's
// devices.<id>.allocator_model, whatif's rows, the OOM alternatives): one
// shape wherever a model run appears.

#include "json_out.h"
#include "memscope/allocator/allocator_model_replay.h"

namespace memscope::json {

// {settings, settings_source, reserved_peak_bytes, segment_allocs, segment_maps,
//  largest_free_block_at_peak_bytes, fragmentation_at_peak_bytes, first_failure}
// and, with `recorded`, what the trace recorded and by how much they differ.
void allocatorModel(Out& w, const AllocatorModelRun& run, bool recorded);

}  // namespace memscope::json
