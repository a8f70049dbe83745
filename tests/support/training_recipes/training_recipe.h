#pragma once
// Training loops as PyTorch's caching allocator history records them, built
// here so that every allocation's true category is known: the classes of
// issue 58 that category inference must hold on (PyTorch's optimizers after
// warm-up, the first optimizer step inside the trace, a model created inside
// it, gradient accumulation, autocast, BatchNorm with SGD and momentum, a
// user's own optimizer). Each allocation carries the frames PyTorch would
// record for it (innermost first: C++ kernels, autograd's engine, the
// optimizers' Python functions, the user's script), the optimizer's
// `Optimizer.step#…` / `Optimizer.zero_grad#…` annotations where PyTorch >=
// 2.5 writes them, and the history switched on where a user switches it on:
// what was alive then is in the end state only, without frames.
//
// The result is a Trace as the snapshot importer would give it, without
// categories or phases; the truth is kept beside it.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::recipes {

enum class OptimizerKind : uint8_t {
    AdamW,        // torch.optim.AdamW: two state tensors per parameter
    SgdMomentum,  // torch.optim.SGD(momentum=0.9): one
    UserAdam,     // a user's own Adam, not a torch.optim.Optimizer: no annotations, no torch frames
};

enum class UpdatePath : uint8_t {
    Foreach,  // _multi_tensor_*: _foreach_* intermediates the size of every parameter at once
    Fused,    // _fused_*: no intermediates
    ForLoop,  // _single_tensor_*: one parameter's intermediates at a time
};

// What `_record_memory_history(stacks=...)` kept: C++ and Python frames
// ("all"), Python frames only ("python"), or none (context=None).
enum class RecordedFrames : uint8_t { All, Python, None };

struct TrainingRecipe {
    std::string name;  // the class, as the truth table prints it
    OptimizerKind optimizer = OptimizerKind::AdamW;
    UpdatePath path = UpdatePath::Foreach;
    bool set_to_none = true;      // zero_grad frees the gradients (else zeroes them in place)
    bool zero_grad_first = true;  // zero_grad at the top of the loop (else after step())
    bool annotations = true;      // PyTorch >= 2.5's Optimizer.step# / zero_grad# ranges
    std::string optimizer_class;  // the class those ranges name ("": AdamW or SGD, as it is)
    RecordedFrames frames = RecordedFrames::All;
    bool from_creation = false;          // the history starts before the model is made
    int warmup_steps = 3;                // steps before the history starts (without from_creation)
    int recorded_steps = 1;              // steps the history holds
    int micro_batches = 1;               // backwards per optimizer step (gradient accumulation)
    bool optimizer_in_backward = false;  // a step per parameter as autograd makes its gradient
    bool fetch_at_loop_end = false;  // the next batch is loaded after step(), before the loop turns
    bool autocast = false;           // forwards cast the weights to bf16 (saved for backward)
    bool conv_batch_norm = false;    // conv layers with BatchNorm (running statistics: buffers)
    int layers = 6;
};

// The classes of issue 58, each with data of its own making.
std::vector<TrainingRecipe> issue58Classes();

struct RecipeTrace {
    Trace trace;                          // as imported: no categories, no phases
    std::vector<Category> truth_of;       // per event of `trace` (Alloc and FreeCompleted)
    std::map<uint64_t, Category> blocks;  // end-state blocks by address
    // What the model holds, counted from its own shape as a user would:
    // the parameters and buffers, their gradients, the optimizer's state.
    int64_t parameter_bytes = 0;
    int64_t gradient_bytes = 0;
    int64_t optimizer_state_bytes = 0;
};

RecipeTrace buildRecipe(const TrainingRecipe& recipe);

}  // namespace memscope::recipes
