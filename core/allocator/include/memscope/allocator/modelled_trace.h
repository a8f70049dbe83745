#pragma once
// A predicted run's allocator as the model predicts it. A prediction's events
// are a simulation whose segment events would otherwise be the measured run's;
// here they are replaced on the device by the model's, every allocation is
// moved to the address the model gives it, and the end-of-recording state
// becomes the model's. Every view that draws segments (reserved bytes, the
// allocator panel, compare) then shows the predicted allocator, not the
// measured one.

#include "memscope/allocator/allocator_model_replay.h"
#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// `timeline` is `trace`'s, for the device to model; it is stale afterwards
// (rebuild it). Where the model fails at the device capacity, the trace is
// left as it was and the run says where it failed. O(events).
Result<AllocatorModelRun> applyAllocatorModel(Trace& trace, const DeviceTimeline& timeline,
                                              AllocatorModelOptions options,
                                              const TaskContext& ctx = {});

}  // namespace memscope
