#pragma once
// Text for the views: byte sizes, times on the shared axis, frames and stacks.
// Display only; every figure shown comes from core.

#include <QString>
#include <QStringList>
#include <cstdint>

#include "memscope/inference/frames.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope::gui {

QString formatBytes(double bytes);        // "1.50 GiB", "-12.0 MiB"
QString formatAddress(uint64_t address);  // "0x7f3a00000000"
// A run x as text: seconds since the timeline start, or "event N".
QString formatRunTime(const Trace& trace, const DeviceTimeline& tl, int64_t x);
QString toQString(std::string_view s);

// Up to `max` frames, noise hidden, innermost first.
QStringList topFrames(const Trace& trace, StackId stack, int max);

// The multi-line hover text for one allocation.
QString allocationText(const Trace& trace, const DeviceTimeline& tl, const AllocationInterval& a,
                       int maxFrames);

}  // namespace memscope::gui
