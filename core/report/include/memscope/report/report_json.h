#pragma once
// The JSON reports front ends print: `memscope-cli summary --json`, and the
// per-phase peaks the trainer's summary.json embeds. Written with RapidJSON's
// streaming writer; shapes documented in docs/JSON_REFERENCE.md.

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memscope/analysis/activation_theory.h"
#include "memscope/analysis/summary.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/ranks/rank_run.h"
#include "memscope/timeline/phase_peaks.h"
#include "memscope/timeline/timeline.h"
#include "memscope/whatif/oom_alternatives.h"

namespace memscope {

struct FileReport {
    std::string path;
    std::string format;  // the importer that read it
    const Trace* trace = nullptr;
    const Timeline* timeline = nullptr;  // for the sites at the peak
    TraceSummary summary;
    std::vector<LoadWarning> warnings;
    // The run's name as shown beside the others' (run_name.h's
    // distinctRunNames); "" = the trace's own name.
    std::string name;
    // `summary --by-line`: the source lines holding the most bytes at the
    // peak (source_lines.h), at most this many; 0 = not shown.
    size_t by_line = 0;
    // For each OOM with a request (by its Trace::events index): what would
    // have fit (oom_alternatives.h), once addOomAlternatives filled it.
    std::vector<std::pair<uint64_t, OomAlternatives>> oom_alternatives{};
};

// Fills `file.oom_alternatives` for every OOM report with a request; the
// ones that cannot be predicted are left out. A replay per setting and a
// what-if per OOM: the CLI's summary and the GUI's banner ask for it.
void addOomAlternatives(FileReport& file, const TaskContext& ctx = {});

// {"files": [{"path", "name"?, "format", "source"?, "warnings"?, "devices": {"0": {...}}}],
//  "runs"?: [multi-rank runs as rank_json.h writes them]}
// "name": the run's name ("train.py rank 1"), left out when it has none;
// "runs" only when there are multi-rank runs.
std::string summaryToJson(std::span<const FileReport> files, std::span<const RankRun> runs = {});

// {"policy", "step", "element_bytes", "formula", "source", "measured_bytes",
//  "predicted_bytes", "ratio", "outside_layers_bytes",
//  "layers": [{"layer", "measured_bytes", "predicted_bytes", "formula"}]}
std::string activationTheoryToJson(const ActivationTheory& theory);

// {"forward": {"bytes", "time_us", "increase_bytes", "phase", "by_category"}, ...}
std::string peaksByPhaseToJson(const Trace& trace, const PhasePeaks& peaks);

}  // namespace memscope
