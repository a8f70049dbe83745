#pragma once
// A loaded run as the views see it: immutable traces and their timelines, handed
// over from the loader thread as shared_ptr<const ...> (heaptrack's parser
// pattern). A folder of per-rank traces is one Run with one part per rank.

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/model/module_attribution.h"
#include "memscope/model/op_attribution.h"
#include "memscope/model/run_name.h"
#include "memscope/model/trace.h"
#include "memscope/ranks/rank_run.h"
#include "memscope/timeline/timeline.h"
#include "memscope/view/device_view.h"

namespace memscope::gui {

// Up to this many ranks, a folder is opened whole (each rank's timeline kept,
// and the rank selector shows them); past it, only their digests are kept.
inline constexpr size_t kFullyOpenedRanks = 8;

struct RunPart {
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const Timeline> timeline;
    QString path;
    QString format;                     // the importer that read it
    std::vector<LoadWarning> warnings;  // what the load lost or changed
    // One per device of timeline->devices(), in its order: what its views
    // draw, built by core on the loader thread (memscope/view/device_view.h).
    std::vector<DeviceView> views;
    // Which module each time belongs to (core's one rule), built once on
    // the loader thread: the by-module plot, hover, inspector and tables
    // all ask it. Never null; empty for a trace without modules.
    std::shared_ptr<const ModuleAttribution> modules;
    // Which op made each allocation (recorded or inferred), built once on
    // the loader thread. Never null; empty for a trace without ops.
    std::shared_ptr<const OpAttribution> ops;
};

// One device of one part: what a timeline view shows.
struct DeviceRef {
    int part = 0;
    int device_index = 0;  // index into timeline->devices()
    friend bool operator==(const DeviceRef&, const DeviceRef&) = default;
};

struct Run {
    QString name;  // the trace's ("train.py rank 1"), else the file's stem; a folder's name
    QStringList paths;
    std::vector<RunPart> parts;
    // A folder of several ranks: each rank's digest, for the Ranks view. A
    // folder of more than kFullyOpenedRanks ranks is opened rank by rank in
    // bounded memory and has digests only (no parts): a rank the user opens
    // from the Ranks view loads as a run of its own.
    std::shared_ptr<const RankRun> ranks;

    std::vector<DeviceRef> devices() const;
    QString deviceLabel(DeviceRef ref) const;  // "cuda:0", "rank 1 / cuda:0"
    const DeviceTimeline* timeline(DeviceRef ref) const;
    const Trace* trace(DeviceRef ref) const;
    // The device's view data; nullptr for an unknown ref.
    const DeviceView* view(DeviceRef ref) const;
    const AllocationIndex* allocationIndex(DeviceRef ref) const;
    std::span<const OomReport> ooms(DeviceRef ref) const;
    // The phase strip's items; nullptr for an unknown ref.
    std::shared_ptr<const PhaseBandData> phaseBands(DeviceRef ref) const;
    // The part's module attribution; nullptr for an unknown ref.
    const ModuleAttribution* moduleAttribution(DeviceRef ref) const;
    // The part's op attribution; nullptr for an unknown ref.
    const OpAttribution* opAttribution(DeviceRef ref) const;
    // The device of the run's first out-of-memory event (by time): what a
    // view of a run that ran out of memory shows first.
    std::optional<DeviceRef> firstOomDevice() const;
    // The device with the highest peak: what a view shows first.
    DeviceRef busiestDevice() const;
    // Its name, pid (one process) and path, for core's distinctRunNames.
    RunLabel label() const;
};

// The names to show for runs side by side (tabs, the compare view): each
// run's name, with its pid or file where several share one (run_name.h).
QStringList distinctNames(const std::vector<std::shared_ptr<const Run>>& runs);

using RunPtr = std::shared_ptr<const Run>;

}  // namespace memscope::gui

Q_DECLARE_METATYPE(memscope::gui::RunPtr)
