#include "category_inference.h"

#include "memscope/timeline/timeline.h"
#include "training_activity.h"

namespace memscope::detail {
namespace {

// Whether `later` is in a later step than `earlier`, or past its stage in the
// same step. Without steps, a free in an earlier stage than the birth belongs
// to a later iteration.
bool afterStage(Position earlier, Position later) {
    if (earlier.step >= 0 && later.step >= 0 && later.step != earlier.step)
        return later.step > earlier.step;
    if (later.stage == Stage::None || earlier.stage == Stage::None) return false;
    return later.stage != earlier.stage;
}

bool sameStage(Position a, Position b) {
    return a.stage == b.stage && (a.step < 0 || b.step < 0 || a.step == b.step);
}

class Classifier {
public:
    Classifier(const Trace& trace, TrainingActivity& activity) : trace_(trace), act_(activity) {}

    // Whether the first step's optimizer (after backward) kept anything: then
    // what its backward kept is gradients (zero_grad keeping them), otherwise
    // it is state of an optimizer fused into backward.
    void scanFirstStep(const std::vector<uint64_t>& free_of) {
        uint64_t in_backward = 0, in_optimizer = 0;
        for (uint64_t i = 0; i < trace_.events.size(); ++i) {
            const Event& e = trace_.events[i];
            if (e.kind != EventKind::Alloc || free_of[i] != kNoEvent) continue;
            const Position p = act_.of(i);
            if (p.step != 0) continue;
            in_backward += p.stage == Stage::Backward;
            in_optimizer += p.stage == Stage::Optimizer;
        }
        // Adam keeps two buffers per parameter, gradients are one: whichever
        // stage kept more holds the optimizer's state.
        optimizer_keeps_ = in_optimizer > in_backward;
    }

    InferredCategory ofAlloc(uint64_t i, uint64_t free) {
        const Event& e = trace_.events[i];
        const Position born = act_.of(i);
        const FrameActivity frames = act_.ofStack(e.stack);
        const bool kept = free == kNoEvent;
        if (frames == FrameActivity::Optimizer) {
            if (kept || afterStage(born, act_.of(free)))
                return {Category::OptimizerState, CategoryRule::OptimizerBornKept};
            if (outlivedOptimizerStep(born, free))
                return {Category::OptimizerState, CategoryRule::OptimizerRangeOutlived};
            return {Category::Temporary, CategoryRule::WithinPhase};
        }
        if (frames == FrameActivity::ZeroGrad)
            return {Category::Temporary, CategoryRule::WithinPhase};
        if (kept) {
            if (frames == FrameActivity::ModuleSetup)
                return {Category::Parameter, CategoryRule::ModuleSetupFrame};
            // Made before the first forward and never freed: the model's
            // parameters and buffers, whatever the frames that made them.
            if (act_.hasSteps() && e.time < act_.firstForwardStart())
                return {Category::Parameter, CategoryRule::AliveThroughout};
            switch (born.stage) {
                case Stage::Optimizer:
                    return {Category::OptimizerState, CategoryRule::OptimizerBornKept};
                case Stage::Backward:
                    return keptFromBackward(born, frames);
                default:
                    return {Category::Unknown, CategoryRule::Weak};
            }
        }
        const Position died = act_.of(free);
        // zero_grad(set_to_none=True) after backward frees gradients and
        // nothing else, even where the phases put their birth in forward (a
        // backward inferred to begin late, after a checkpointed block's
        // recompute). One inside backward (an optimizer per parameter) is
        // left to the stages: its range may hold backward's own frees.
        if (born.stage == Stage::Forward && died.stage == Stage::Optimizer &&
            (died.zero_grad || act_.ofStack(trace_.events[free].stack) == FrameActivity::ZeroGrad))
            return {Category::Gradient, CategoryRule::FreedByZeroGrad};
        switch (born.stage) {
            case Stage::BeforeForward:
                if (sameStage(born, died)) return {Category::Temporary, CategoryRule::WithinPhase};
                return {Category::Input, CategoryRule::BeforeForward};
            case Stage::Forward:
                if (sameStage(born, died)) return {Category::Temporary, CategoryRule::WithinPhase};
                if (died.stage == Stage::Backward && (died.step == born.step || died.step < 0))
                    return {Category::Activation, CategoryRule::ForwardToBackward};
                return {Category::Activation, CategoryRule::ForwardOutlivedBackward};
            case Stage::Backward:
                // A recomputed forward's outputs live on into backward proper.
                if (born.recompute && died.stage == Stage::Backward &&
                    trace_.events[i].phase != trace_.events[free].phase)
                    return {Category::Activation, CategoryRule::RecomputedForBackward};
                // Consumed by an optimizer step run inside backward (one
                // per parameter, its gradient freed right after).
                if (died.optimizer_phase != 0 && born.optimizer_phase != died.optimizer_phase)
                    return {Category::Gradient, CategoryRule::BackwardToOptimizer};
                if (sameStage(born, died)) return {Category::Temporary, CategoryRule::WithinPhase};
                if (afterStage(born, died))
                    return {Category::Gradient, CategoryRule::BackwardToOptimizer};
                return {Category::Unknown, CategoryRule::Weak};
            case Stage::Optimizer:
                if (outlivedOptimizerStep(born, free))
                    return {Category::OptimizerState, CategoryRule::OptimizerRangeOutlived};
                if (sameStage(born, died)) return {Category::Temporary, CategoryRule::WithinPhase};
                // Made after the recorded optimizer step, outside it and not
                // by an optimizer, and used up by the next step's forward or
                // backward: the batch a loop fetches at its end.
                if (born.optimizer_phase == 0 && act_.recordedOptimizerAfterBackward(born.step) &&
                    died.step > born.step &&
                    (died.stage == Stage::Forward || died.stage == Stage::Backward))
                    return {Category::Input, CategoryRule::InputForNextStep};
                return {Category::OptimizerState, CategoryRule::OptimizerBornKept};
            case Stage::None:
                break;
        }
        return {Category::Unknown, CategoryRule::Weak};
    }

    InferredCategory ofGhostFree(uint64_t i) {
        const Position at = act_.of(i);
        const FrameActivity frames = act_.ofStack(trace_.events[i].stack);
        // The previous step's gradients, freed by this one's zero_grad.
        if (at.zero_grad || frames == FrameActivity::ZeroGrad)
            return {Category::Gradient, CategoryRule::GradientFreedByZeroGrad};
        // Alive before the trace and freed by the optimizer's step: state the
        // step replaced (a user's optimizer that assigns new moments).
        if (frames == FrameActivity::Optimizer || (at.optimizer_phase != 0 && !at.zero_grad))
            return {Category::OptimizerState, CategoryRule::FreedByOptimizerStep};
        if (at.stage == Stage::Backward)
            return {Category::Activation, CategoryRule::FreedInBackward};
        return {Category::Unknown, CategoryRule::Weak};
    }

private:
    // Made in backward and alive to the end of the trace: the gradients a
    // later optimizer step reads (zero_grad at the top of the loop keeps
    // them until the next step), or the state of an optimizer run inside
    // backward (which consumes each gradient as it is made).
    InferredCategory keptFromBackward(Position born, FrameActivity frames) const {
        if (born.optimizer_phase != 0)
            return {Category::OptimizerState, CategoryRule::OptimizerInBackwardKept};
        // Autograd's engine made it (AccumulateGrad's clone, or a backward
        // op's output it took as the gradient): the optimizer's own frames
        // would have been stronger.
        if (frames == FrameActivity::Backward)
            return {Category::Gradient, CategoryRule::GradientByAutograd};
        if (act_.recordedOptimizerAfterBackward(born.step))
            return {Category::Gradient, CategoryRule::BackwardKeptForOptimizer};
        if (optimizer_keeps_) return {Category::Gradient, CategoryRule::BackwardKept};
        return {Category::OptimizerState, CategoryRule::OptimizerInBackwardKept};
    }

    // Born in an optimizer step (not zero_grad) and freed after that step
    // ended: state a user's optimizer made in its step (created at the first
    // step, dropped when training ends), not a temporary of the update.
    bool outlivedOptimizerStep(Position born, uint64_t free) {
        if (born.optimizer_phase == 0 || born.zero_grad || free == kNoEvent) return false;
        const Position died = act_.of(free);
        return died.optimizer_phase != born.optimizer_phase &&
               trace_.events[free].time > born.optimizer_end;
    }

    const Trace& trace_;
    TrainingActivity& act_;
    bool optimizer_keeps_ = false;
};

}  // namespace

std::vector<InferredCategory> inferCategories(const Trace& trace,
                                              const std::vector<uint64_t>& free_of,
                                              const std::vector<uint8_t>& ghost_free,
                                              TrainingActivity& activity) {
    std::vector<InferredCategory> out(trace.events.size());
    Classifier classify(trace, activity);
    classify.scanFirstStep(free_of);
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        const Event& e = trace.events[i];
        if (e.category != Category::Unknown) continue;
        if (e.kind == EventKind::Alloc)
            out[i] = classify.ofAlloc(i, free_of[i]);
        else if (e.kind == EventKind::FreeCompleted && ghost_free[i])
            out[i] = classify.ofGhostFree(i);
    }
    return out;
}

}  // namespace memscope::detail
