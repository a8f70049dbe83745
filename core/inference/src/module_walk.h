#pragma once
// Module inference from stack frames in two steps: the walk over every
// allocation's frames only reads the trace, so it can run beside other work
// that only reads it (the categories); what it found is written after.
// inferModules (module_inference.h) is both steps in one.

#include <memory>

#include "memscope/base/task_context.h"
#include "memscope/inference/module_inference.h"
#include "memscope/model/trace.h"

namespace memscope::detail {

// Whether inferModules would walk the frames: the trace has no modules and
// no block phases to take them from.
bool modulesNeedFrameWalk(const Trace& trace);

class ModuleFrameWalk {
public:
    explicit ModuleFrameWalk(const Trace& trace);
    ~ModuleFrameWalk();
    ModuleFrameWalk(const ModuleFrameWalk&) = delete;
    ModuleFrameWalk& operator=(const ModuleFrameWalk&) = delete;

    void run(const TaskContext& ctx);  // reads the trace only
    // The trace's module scopes from the walk (none if it was cancelled);
    // `trace` is the one the walk read.
    ModuleInferenceReport apply(Trace& trace, const TaskContext& ctx);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace memscope::detail
