#include "memscope/model/types.h"

#include <array>

#include "memscope/base/task_context.h"

namespace memscope {
namespace {

// Names as PyTorch writes them (snapshot actions, torch.profiler categories).
constexpr std::array<std::string_view, kEventKindCount> kKindNames = {
    "alloc",        "free_requested", "free_completed", "segment_alloc",
    "segment_free", "segment_map",    "segment_unmap",  "oom",
    "snapshot",     "marker"};
constexpr std::array<std::string_view, kCategoryCount> kCategoryNames = {
    "parameter",  "optimizer_state", "input",           "temporary",
    "activation", "gradient",        "autograd_detail", "unknown"};

}  // namespace

std::string_view toString(EventKind kind) {
    const auto i = static_cast<size_t>(kind);
    return i < kKindNames.size() ? kKindNames[i] : std::string_view("invalid");
}

std::string_view toString(Category category) {
    const auto i = static_cast<size_t>(category);
    return i < kCategoryNames.size() ? kCategoryNames[i] : std::string_view("invalid");
}

namespace {
// In CategoryRule's order.
constexpr std::array<std::string_view, kCategoryRuleCount> kRuleNames = {
    "recorded",
    "alive_throughout",
    "module_setup_frame",
    "optimizer_born_kept",
    "optimizer_in_backward_kept",
    "backward_kept",
    "backward_to_optimizer",
    "forward_to_backward",
    "forward_outlived_backward",
    "recomputed_for_backward",
    "freed_in_backward",
    "before_forward",
    "within_phase",
    "weak",
    "parameter_of_set",
    "adam_state_of_set",
    "momentum_state_of_set",
    "gradient_freed_by_zero_grad",
    "optimizer_range_outlived",
    "freed_by_optimizer_step",
    "gradient_kept_of_set",
    "gradient_by_autograd",
    "backward_kept_for_optimizer",
    "input_for_next_step",
    "freed_by_zero_grad"};
}  // namespace

std::string_view toString(CategoryRule rule) {
    const auto i = static_cast<size_t>(rule);
    return i < kRuleNames.size() ? kRuleNames[i] : std::string_view("invalid");
}

std::string_view describe(CategoryRule rule) {
    switch (rule) {
        case CategoryRule::Recorded:
            return "recorded by the producer";
        case CategoryRule::AliveThroughout:
            return "alive from before the first step to the end";
        case CategoryRule::ModuleSetupFrame:
            return "allocated by a module's construction (torch's modules' __init__, nn.init) or "
                   "Module.to()/_apply, and kept";
        case CategoryRule::OptimizerBornKept:
            return "born in an optimizer step and kept after it";
        case CategoryRule::OptimizerInBackwardKept:
            return "born in the first backward and kept to the end (optimizer in backward)";
        case CategoryRule::BackwardKept:
            return "born in backward and kept to the end";
        case CategoryRule::BackwardToOptimizer:
            return "born in backward, freed by the optimizer step, zero_grad or later";
        case CategoryRule::ForwardToBackward:
            return "born in forward, freed in backward";
        case CategoryRule::ForwardOutlivedBackward:
            return "born in forward, freed after backward";
        case CategoryRule::RecomputedForBackward:
            return "born in a recompute, freed later in backward";
        case CategoryRule::FreedInBackward:
            return "alive before the trace began, freed in backward";
        case CategoryRule::BeforeForward:
            return "born in a step before its forward, kept past it";
        case CategoryRule::WithinPhase:
            return "born and freed within one phase";
        case CategoryRule::Weak:
            return "the evidence is too weak";
        case CategoryRule::ParameterOfSet:
            return "alive before the trace, one block per gradient of its size";
        case CategoryRule::AdamStateOfSet:
            return "one of 3 same-size blocks per parameter, alive before the trace";
        case CategoryRule::MomentumStateOfSet:
            return "one of 2 same-size blocks per parameter, alive before the trace";
        case CategoryRule::GradientFreedByZeroGrad:
            return "alive before the trace, freed by zero_grad";
        case CategoryRule::OptimizerRangeOutlived:
            return "born in an optimizer step and freed after that step ended";
        case CategoryRule::GradientByAutograd:
            return "made by autograd's engine in backward (AccumulateGrad, a backward op) and kept "
                   "past it";
        case CategoryRule::BackwardKeptForOptimizer:
            return "born in backward and kept past it, with an optimizer step after backward";
        case CategoryRule::InputForNextStep:
            return "born after the optimizer step, outside it, and used up by the next step (the "
                   "batch a loop fetches at its end)";
        case CategoryRule::FreedByZeroGrad:
            return "freed by zero_grad, which frees gradients and nothing else";
        case CategoryRule::FreedByOptimizerStep:
            return "alive before the trace, freed by an optimizer step (state it replaced)";
        case CategoryRule::GradientKeptOfSet:
            return "alive before the trace, one of a parameter's same-size blocks (zero_grad "
                   "without set_to_none keeps gradients)";
    }
    return "unknown rule";
}

std::optional<EventKind> eventKindFromString(std::string_view name) {
    for (size_t i = 0; i < kKindNames.size(); ++i)
        if (kKindNames[i] == name) return static_cast<EventKind>(i);
    return std::nullopt;
}

std::optional<Category> categoryFromString(std::string_view name) {
    for (size_t i = 0; i < kCategoryNames.size(); ++i)
        if (kCategoryNames[i] == name) return static_cast<Category>(i);
    return std::nullopt;
}

}  // namespace memscope

namespace memscope {

std::string_view toString(WarningKind kind) {
    switch (kind) {
        case WarningKind::DamagedTail:
            return "damaged_tail";
        case WarningKind::DroppedRecords:
            return "dropped_records";
        case WarningKind::ClampedValues:
            return "clamped_values";
        case WarningKind::SkippedRecords:
            return "skipped_records";
        case WarningKind::Other:
            return "other";
    }
    return "other";
}

}  // namespace memscope
