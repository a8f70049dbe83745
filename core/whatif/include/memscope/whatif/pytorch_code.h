#pragma once
// A policy as the few lines of PyTorch that apply it to the user's model
// (`whatif --emit pytorch`, the GUI's "Copy as code"): each checkpointed
// module's forward run under torch.utils.checkpoint, by the module paths the
// trace recorded; save lists as a selective-checkpoint policy; an
// nn.Sequential under checkpoint_sequential; the optimizer fused into
// backward as PyTorch's tutorial does it. Each part says the PyTorch
// version it needs. The same PolicyModules record --apply hands the hook,
// so the code applies what was predicted.

#include <string>

#include "memscope/whatif/policy_modules.h"

namespace memscope {

struct PytorchCodeOptions {
    std::string source;  // the run the policy was predicted from, for the header comment
};

std::string pytorchCode(const PolicyModules& policy, const PytorchCodeOptions& options = {});

// The oldest PyTorch the emitted code runs on: "1.11" (checkpoint's
// use_reentrant), "2.1" (post-accumulate-grad hooks), "2.4" (selective
// checkpoint contexts).
std::string pytorchCodeNeeds(const PolicyModules& policy);

}  // namespace memscope
