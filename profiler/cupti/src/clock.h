#pragma once
// The tracer's clocks. Phases and callback events use CUPTI's clock so that
// they line up with activity records (Unix-epoch ns by default); the wall
// clock is kept beside it in the trace header for other tools.

#include <cstdint>

namespace memscope::cupti {

int64_t cuptiNowNs();  // cuptiGetTimestamp (~25 ns); wall clock if it fails
int64_t wallNowNs();   // CLOCK_REALTIME
int64_t monotonicNowNs();

}  // namespace memscope::cupti
