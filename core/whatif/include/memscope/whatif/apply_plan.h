#pragma once
// The apply plan: what `memscope-cli record --apply POLICY` hands the Python
// hook (profiler/pyhook/memscope_hook/apply.py) so that it runs the job with
// the policy applied: which modules' forwards it wraps in
// torch.utils.checkpoint, which ops' outputs those keep, the container it
// runs through checkpoint_sequential, and whether the optimizer step is fused
// into backward. One JSON document, "memscope-apply/1" (docs/HOOK_FORMAT.md).

#include <string>
#include <string_view>

#include "memscope/whatif/policy_modules.h"

namespace memscope {

inline constexpr std::string_view kApplyPlanFormat = "memscope-apply/1";

// The plan as JSON text:
// {"format":"memscope-apply/1","policy":P,"use_reentrant":B,
//  "optimizer_in_backward":B,"checkpoint":[{"root","path","type","save":[OP...]}],
//  "sequential":{"root","path","type","segments":K} or null}
std::string applyPlanJson(const PolicyModules& modules);

}  // namespace memscope
