#pragma once
// What part of training an event happened in, as the inference reads it: from
// the stack's frames where they say (an optimizer's update, autograd, a
// module's forward), else from the event's phase. Memoized per stack and per
// phase: traces share a few thousand stacks among millions of events.

#include <cstdint>
#include <string_view>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::detail {

// Frames' evidence, strongest first where a stack holds several: zero_grad
// (its _foreach_zero_ is not an update); an update called from a backward
// hook is the optimizer's; a forward re-run inside backward (recompute) is
// backward's.
enum class FrameActivity : uint8_t {
    None = 0,
    Optimizer,    // torch/optim, _single/_multi_tensor_*, _foreach_*, a user's optimizer step
    ZeroGrad,     // zero_grad
    Backward,     // Tensor.backward, autograd's engine, *Backward0 nodes
    ModuleSetup,  // Module._apply / .to() / .cuda(), torch's modules' __init__ and
                  // reset_parameters, nn.init: parameters made or moving in
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
    bool zero_grad = false;  // inside a zero_grad range (Optimizer.zero_grad#...)
    // The innermost optimizer phase the event is in (PhaseId value, 0 = none)
    // and its end: state an optimizer step makes outlives its range.
    uint32_t optimizer_phase = 0;
    int64_t optimizer_end = 0;
};

// Optimizer ranges as PyTorch's optimizers name them ("Optimizer.step#AdamW.step",
// "Optimizer.zero_grad#AdamW.zero_grad"), any case.
bool isZeroGradName(std::string_view name);
bool isOptimizerStepName(std::string_view name);

class TrainingActivity {
public:
    explicit TrainingActivity(const Trace& trace);

    FrameActivity ofStack(StackId stack);
    Position of(uint64_t event);

    bool hasSteps() const { return !step_starts_.empty(); }
    size_t stepCount() const { return step_starts_.size(); }
    // Where the first step's forward began (its start when it has none).
    int64_t firstForwardStart() const { return first_forward_start_; }
    // Whether the trace recorded an optimizer step (not zero_grad) after
    // backward in step `step`, outside backward: what backward made and kept
    // then waits for it (gradients), where an optimizer run inside backward
    // would have consumed them.
    bool recordedOptimizerAfterBackward(int32_t step) const {
        return step >= 0 && size_t(step) < optimizer_after_backward_.size() &&
               optimizer_after_backward_[size_t(step)];
    }

private:
    struct PhaseInfo {
        int32_t step = -1;
        Stage stage = Stage::None;
        bool recompute = false;
        bool zero_grad = false;
        uint32_t optimizer = 0;             // innermost optimizer phase, itself or an ancestor
        int64_t forward_start = INT64_MAX;  // of its step, for BeforeForward
    };
    // A training phase by time, for events whose own phase says no stage (a
    // recorded range, DDP's or a user's, inside an inferred forward).
    struct StageSpan {
        int64_t start = 0, end = 0;
        Stage stage = Stage::None;
        bool recompute = false;
    };
    void markRecordedOptimizerSteps(const std::vector<uint8_t>& zero_grad_name);
    FrameActivity classifyStack(StackId stack);
    uint16_t traits(StringId id);  // what the string says as a function name or file
    const StageSpan* stageAt(int64_t time, int16_t device) const;
    bool insideBackwardSpan(int64_t start, int64_t end, int16_t device) const;
    const Trace& trace_;
    std::vector<uint8_t> stack_memo_;      // FrameActivity + 1, 0 = not yet
    std::vector<uint8_t> frame_memo_;      // per FrameId: FrameActivity + 1
    std::vector<uint16_t> string_traits_;  // per StringId, 0 = not yet read
    std::vector<PhaseInfo> phase_info_;    // per PhaseId value
    std::vector<int64_t> step_starts_;
    std::vector<int64_t> step_forward_starts_;       // by step ordinal
    std::vector<uint8_t> optimizer_after_backward_;  // by step ordinal
    int64_t first_forward_start_ = 0;
    std::vector<StageSpan> spans_;       // by start
    std::vector<int16_t> span_devices_;  // parallel to spans_
};

}  // namespace memscope::detail
