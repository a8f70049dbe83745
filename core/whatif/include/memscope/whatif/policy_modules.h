#pragma once
// A whatif policy resolved onto the modules of the model a trace recorded:
// which module's forward runs under torch.utils.checkpoint, with which save
// list, and whether the optimizer steps in backward. What `record --apply`
// hands the Python hook and what `whatif --emit pytorch` writes as code, so
// that both apply the policy the prediction simulated.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"
#include "memscope/whatif/whatif.h"

namespace memscope {

// One module whose forward runs under torch.utils.checkpoint.
struct CheckpointedModule {
    std::string root;  // the root module's label as the trace records it ("GPT", "GPT#2")
    std::string path;  // qualified name under the root, as named_modules() gives it ("h.3")
    std::string type;  // its class name ("Block"); "" when unknown
    // Ops as PyTorch names them ("aten::mm") whose outputs are saved, not
    // recomputed (a selective-checkpoint policy); empty: all recomputed.
    std::vector<std::string> save_ops = {};
};

// torch.utils.checkpoint.checkpoint_sequential(container, segments, input).
struct SequentialCheckpoint {
    std::string root, path, type;
    int64_t segments = 0;
};

struct PolicyModules {
    std::string policy;                       // WhatIfPolicy::name
    std::vector<CheckpointedModule> modules;  // forward order
    std::optional<SequentialCheckpoint> sequential;
    bool optimizer_in_backward = false;
    bool reentrant = false;  // use_reentrant
};

// `policy` resolved onto the modules `measured` recorded (its layer chain on
// the device with the most allocations; `style` Auto resolved as whatif
// does). An error a user can act on when it cannot be: a policy that
// checkpoints several layers as one region (sqrt, segments:K, uniform:N
// with N > 1) other than sequential:K over an nn.Sequential, selective (the
// attention core is no module), a trace without modules.
Result<PolicyModules> policyModules(const WhatIfPolicy& policy, const Trace& measured,
                                    CheckpointStyle style = CheckpointStyle::Auto);

// The ops a save list names, as PyTorch names them: its kinds expanded
// ("matmul": aten::mm, aten::addmm, …), then the ops it names.
std::vector<std::string> saveListOps(const Policy& policy);

}  // namespace memscope
