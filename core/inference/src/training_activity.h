#pragma once
// What part of training an event happened in, as the inference reads it: from
// the stack's frames where they say (an optimizer's update, autograd, a
// module's forward), else from the event's phase. Memoized per stack and per
// phase: traces share a few thousand stacks among millions of events.

#include <cstdint>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::detail {

// Frames' evidence, strongest first where a stack holds several: an update
// called from a backward hook is the optimizer's; a forward re-run inside
// backward (recompute) is backward's.
enum class FrameActivity : uint8_t {
    None = 0,
    Optimizer,    // torch/optim, _single/_multi_tensor_*, _foreach_*, a user's optimizer step
    ZeroGrad,     // zero_grad
    Backward,     // Tensor.backward, autograd's engine, *Backward0 nodes
    ModuleSetup,  // Module._apply / .to() / .cuda(): parameters moving in
    Forward,      // a module's forward
};

// Where in a training step, in the order a step runs.
enum class Stage : uint8_t {
    None = 0,       // no evidence
    BeforeForward,  // inside a step, before its forward
    Forward,
    Backward,   // including recompute and an optimizer fused into it
    Optimizer,  // the optimizer, zero_grad, and what follows backward in a step
};

struct Position {
    int32_t step = -1;  // ordinal of the step (by start), -1 = before the first / none
    Stage stage = Stage::None;
    bool recompute = false;  // inside a recompute phase (a checkpointed region re-run)
};

class TrainingActivity {
public:
    explicit TrainingActivity(const Trace& trace);

    FrameActivity ofStack(StackId stack);
    Position of(uint64_t event);

    bool hasSteps() const { return !step_starts_.empty(); }
    size_t stepCount() const { return step_starts_.size(); }
    int64_t firstStepStart() const { return step_starts_.empty() ? 0 : step_starts_.front(); }

private:
    struct PhaseInfo {
        int32_t step = -1;
        Stage stage = Stage::None;
        bool recompute = false;
        int64_t forward_start = INT64_MAX;  // of its step, for BeforeForward
    };
    FrameActivity classifyStack(StackId stack);
    const Trace& trace_;
    std::vector<uint8_t> stack_memo_;    // FrameActivity + 1, 0 = not yet
    std::vector<uint8_t> frame_memo_;    // per FrameId: FrameActivity + 1
    std::vector<PhaseInfo> phase_info_;  // per PhaseId value
    std::vector<int64_t> step_starts_;
};

}  // namespace memscope::detail
