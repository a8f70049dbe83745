#pragma once
// `memscope-cli summary` as text: one file's devices (peaks, reserved, the
// composition at the peak, OOMs, per-phase peaks, top sites, top layers,
// activation theory), and a multi-rank run's per-rank table. The JSON of the
// same command is report_json.h's.

#include <string>
#include <string_view>

#include "memscope/model/trace.h"
#include "memscope/ranks/rank_run.h"
#include "memscope/report/report_json.h"

namespace memscope {

// "recorded only   ..." and "alive at start  ...": a recording cut to a range
// of steps says so (empty for a whole recording); each line starts with `indent`.
std::string recordedRangeText(const Trace& trace, std::string_view indent);

// "train.py rank 1: PATH  (native, from memscope-record)" and its devices.
std::string summaryText(const FileReport& file);

// One row per rank and the imbalance in words; parts without a rank beside
// ranked ones (a launcher that imported torch) are listed after, not compared.
std::string rankRunText(const RankRun& run);

}  // namespace memscope
