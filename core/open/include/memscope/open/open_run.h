#pragma once
// The one way every front end opens what a user names: a trace file, or a
// folder of per-rank traces as one run. Import (with the importer the file's
// bytes choose, and core's native reader when no native plugin is present),
// typed warnings, and the timeline, so that `memscope-cli summary`, `compare`,
// `check`, `convert`, `record`'s report and the GUI read files the same way.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memscope/base/stage_times.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/open/plugin_registry.h"
#include "memscope/timeline/events_by_device.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// One file, opened.
struct OpenedTrace {
    std::string path;
    std::string format;  // the importer that read it ("native" for core's reader)
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const Timeline> timeline;  // null when OpenOptions::timeline is off
    std::vector<LoadWarning> warnings;
};

// What was opened: one file, or a folder's traces with ranks in order (by
// the traces' rank, files without one after them, then by file name).
struct OpenedRun {
    std::string path;  // as given
    std::string name;  // the trace's name, else the file stem; a folder's name
    bool folder = false;
    std::vector<OpenedTrace> parts;

    std::vector<LoadWarning> warnings() const;  // every part's, in order
};

struct OpenOptions {
    bool timeline = true;  // build the timeline (convert does not need it)
    // Infer steps, phases and categories the trace lacks (inference.h), before
    // the timeline is built; convert leaves them out, so that inferred labels
    // are never written to a file as recorded ones.
    bool infer = true;
    TimelineOptions timeline_options;
    // When set, the wall time of each stage (import, inference, timeline).
    StageTimes* stages = nullptr;
    // Called on the opening thread once each device's events are in time
    // order, before inference; the work it returns (if any) runs on a thread
    // of its own while inference runs, and the open waits for it before it
    // builds the timeline. That work may read the trace's events, streams and
    // end state, never its phases, categories or metadata, which inference
    // writes meanwhile. Only where inference runs (infer and timeline, not a
    // digest). The summary replays the allocator model so, on the core
    // inference leaves idle much of the time.
    std::function<std::function<void()>(const std::string& path, const Trace& trace,
                                        const detail::DeviceOrder& order)>
        beside_inference;
};

Result<OpenedRun> openRun(const std::string& path, const PluginRegistry& registry,
                          const TaskContext& ctx = {}, const OpenOptions& options = {});

// One file, by path; errors name the file.
Result<OpenedTrace> openTrace(const std::string& path, const PluginRegistry& registry,
                              const TaskContext& ctx = {}, const OpenOptions& options = {});

// A trace already in memory (tests, the GUI's generated runs, benchmarks).
Result<OpenedTrace> openTrace(Trace trace, const std::string& path, const TaskContext& ctx = {},
                              const OpenOptions& options = {});

// The one rule for which files of a folder are traces: regular files, not
// hidden, that an importer recognizes by their first bytes (or the native
// magic), in name order.
std::vector<std::string> traceFilesIn(const std::string& folder, const PluginRegistry& registry);

}  // namespace memscope
