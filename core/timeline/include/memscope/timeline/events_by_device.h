#pragma once
// Trace::events indexes of each device, in time order (stable for equal
// times): the order in which the timeline and the inference walk a device.

#include <cstdint>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::detail {

// One list per entry of `devices`, in that order.
std::vector<std::vector<uint64_t>> eventsByDevice(const Trace& trace,
                                                  const std::vector<int16_t>& devices);

}  // namespace memscope::detail
