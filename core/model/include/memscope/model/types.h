#pragma once
// Small vocabulary types shared by every component: event kinds, categories and
// strong integer ids for everything that is interned (heaptrack's indices.h idea).

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace memscope {

template <typename Tag>
struct StrongId {
    uint32_t value = 0;
    constexpr StrongId() = default;
    constexpr explicit StrongId(uint32_t v) : value(v) {}
    constexpr bool isNull() const { return value == 0; }
    friend constexpr bool operator==(StrongId, StrongId) = default;
    // clang-tidy 14 takes the 0 of the synthesized `<=> 0` for a null pointer.
    // NOLINTNEXTLINE(modernize-use-nullptr)
    friend constexpr auto operator<=>(StrongId, StrongId) = default;
};

// Id 0 is always the empty string / empty stack / "no phase".
using StringId = StrongId<struct StringTag>;
using FrameId = StrongId<struct FrameTag>;
using StackId = StrongId<struct StackTag>;
using PhaseId = StrongId<struct PhaseTag>;

// The order matches the allocator's own trace actions (PyTorch snapshot), plus a
// generic marker. Values are stored on disk: append only, never reorder.
enum class EventKind : uint8_t {
    Alloc = 0,
    FreeRequested = 1,
    FreeCompleted = 2,
    SegmentAlloc = 3,
    SegmentFree = 4,
    SegmentMap = 5,
    SegmentUnmap = 6,
    Oom = 7,
    Snapshot = 8,
    Marker = 9,
};
inline constexpr int kEventKindCount = 10;

// torch.profiler's category order (REFERENCES.md §2); stored on disk: append only.
enum class Category : uint8_t {
    Parameter = 0,
    OptimizerState = 1,
    Input = 2,
    Temporary = 3,
    Activation = 4,
    Gradient = 5,
    AutogradDetail = 6,
    Unknown = 7,
};
inline constexpr int kCategoryCount = 8;
inline constexpr std::array<Category, kCategoryCount> kAllCategories = {
    Category::Parameter,  Category::OptimizerState, Category::Input,          Category::Temporary,
    Category::Activation, Category::Gradient,       Category::AutogradDetail, Category::Unknown};

// Why memscope inferred an allocation's category (inference.h). Recorded = a
// producer recorded the category; the rest name the evidence. In memory only:
// inferred labels are derived when a trace is opened, never stored as facts.
enum class CategoryRule : uint8_t {
    Recorded = 0,
    AliveThroughout,          // parameter: alive from before the first step to the end
    ModuleSetupFrame,         // parameter: allocated by Module._apply / .to() and never freed
    OptimizerBornKept,        // optimizer state: born in an optimizer step, alive past it
    OptimizerInBackwardKept,  // optimizer state: born in the first backward (optimizer in
                              // backward), kept
    BackwardKept,             // gradient: born in backward, kept to the end (zero_grad keeps them)
    BackwardToOptimizer,  // gradient: born in backward, freed by the optimizer, zero_grad or later
    ForwardToBackward,    // activation: born in forward, freed in backward
    ForwardOutlivedBackward,  // activation: born in forward, freed after backward
    RecomputedForBackward,    // activation: born in a recompute, freed later in backward
    FreedInBackward,          // activation: alive before the trace began, freed in backward
    BeforeForward,            // input: born in a step before its forward, kept past it
    WithinPhase,              // temporary: born and freed within one phase
    Weak,                     // unknown: the evidence is too weak
    // Alive before the trace (history switched on after warm-up), told apart
    // by the training's structure: the gradients' sizes (inference.h).
    ParameterOfSet,      // parameter: one block of a gradient's size per gradient
    AdamStateOfSet,      // optimizer state: one of 3 same-size blocks per parameter (Adam-like)
    MomentumStateOfSet,  // optimizer state: one of 2 same-size blocks per parameter (momentum)
    GradientFreedByZeroGrad,  // gradient: alive before the trace, freed by zero_grad
    OptimizerRangeOutlived,   // optimizer state: born in an optimizer step, freed after it ended
    FreedByOptimizerStep,     // optimizer state: alive before the trace, freed by an optimizer step
    GradientKeptOfSet,   // gradient: alive before the trace, one of a parameter's same-size set
    GradientByAutograd,  // gradient: made by autograd's engine in backward, kept past it
    BackwardKeptForOptimizer,  // gradient: born in backward, kept for the optimizer step after it
    InputForNextStep,          // input: born after the optimizer step, used up by the next step
    FreedByZeroGrad,           // gradient: born in the trace, freed by zero_grad
};
inline constexpr int kCategoryRuleCount = 25;

// An inferred category and the rule that gave it.
struct InferredCategory {
    Category category = Category::Unknown;
    CategoryRule rule = CategoryRule::Recorded;
};

std::string_view toString(EventKind kind);
std::string_view toString(Category category);
// "born in forward, freed in backward": the rule as the inspector says it.
std::string_view describe(CategoryRule rule);
// "forward_to_backward": the rule's stable name, for JSON.
std::string_view toString(CategoryRule rule);
std::optional<EventKind> eventKindFromString(std::string_view name);
std::optional<Category> categoryFromString(std::string_view name);

constexpr int index(Category c) {
    return static_cast<int>(c);
}

}  // namespace memscope
