#pragma once
// How the views name modules: an allocation's module path with what kind of
// scope made it and whether memscope inferred it, and the one message every
// module view shows for a trace without modules. Display only: the module
// itself is core's (moduleOfInterval, modulePath).

#include <QString>

#include "memscope/analysis/module_breakdown.h"

namespace memscope::gui {

// "no modules in this trace: record with memscope-cli record, or a snapshot
// with Python frames"
QString noModulesMessage();

// "h.3.attn.c_attn (recompute)", "Block.forward #3 (inferred)",
// "(outside modules)"; "" where the trace has no modules.
QString allocationModuleText(const Trace& trace, const ModuleAttribution& attribution,
                             const AllocationInterval& a);

// " (inferred)" for an inferred module stream, else "".
QString moduleSourceSuffix(ModuleSource source);

}  // namespace memscope::gui
