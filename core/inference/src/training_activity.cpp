#include "training_activity.h"

#include <algorithm>
#include <string_view>

#include "text_match.h"

namespace memscope::detail {
namespace {

// What a string says as a frame's function name or file, as bits: each string
// is read once, however many frames name it. Files from strangers may share
// one long string among thousands of frames (a frame per line number), and
// matching it per frame took minutes.
enum StringTrait : uint16_t {
    kZeroGradFn = 1 << 0,   // zero_grad, Optimizer.zero_grad...
    kOptimizerFn = 1 << 1,  // the optimizers' kernels and Optimizer.step
    kStepFn = 1 << 2,       // "step"
    kBackwardFn = 1 << 3,   // autograd's engine and backward nodes
    kSetupFn = 1 << 4,      // Module._apply, .to, .cuda
    kForwardFn = 1 << 5,    // forward and the module call wrappers
    kOptimDir = 1 << 6,     // a file under torch/optim/
    kOptimFile = 1 << 7,    // a file whose path names optim
    kModulePy = 1 << 8,     // module.py
    kInitFn = 1 << 9,       // __init__, reset_parameters
    kNnModules = 1 << 10,   // a file under torch/nn/modules/
    kNnInit = 1 << 11,      // torch/nn/init.py
    kTraitsKnown = 1 << 15,
};

uint16_t traitsOf(std::string_view s) {
    uint16_t t = kTraitsKnown;
    // Python names first ("step (optim/adam.py:143)"), then C++ ones.
    if (s == "zero_grad" || startsWith(s, "Optimizer.zero_grad")) t |= kZeroGradFn;
    if (startsWith(s, "_single_tensor_") || startsWith(s, "_multi_tensor_") ||
        startsWith(s, "_fused_") || contains(s, "_foreach_") || startsWith(s, "Optimizer.step"))
        t |= kOptimizerFn;
    if (s == "step") t |= kStepFn;
    if (s == "backward" || s == "_engine_run_backward" || s == "run_backward" ||
        contains(s, "torch::autograd::Engine::") || contains(s, "evaluate_function") ||
        (contains(s, "Backward") &&
         (contains(s, "::apply") || contains(s, "Backward0") || contains(s, "Backward1"))))
        t |= kBackwardFn;
    if (s == "_apply" || s == "to" || s == "cuda") t |= kSetupFn;
    // A module's construction: its __init__ and reset_parameters (torch's own
    // modules), nn.init's initializers.
    if (s == "__init__" || s == "reset_parameters") t |= kInitFn;
    if (contains(s, "torch/nn/modules/")) t |= kNnModules;
    if (contains(s, "torch/nn/init.py")) t |= kNnInit;
    if (s == "forward" || s == "_call_impl" || s == "_wrapped_call_impl") t |= kForwardFn;
    if (contains(s, "torch/optim/")) t |= kOptimDir;
    if (contains(s, "optim")) t |= kOptimFile;
    if (endsWith(s, "module.py")) t |= kModulePy;
    return t;
}

FrameActivity classifyFrame(uint16_t fn, uint16_t file) {
    // zero_grad before the optimizer's files, which define it.
    if (fn & kZeroGradFn) return FrameActivity::ZeroGrad;
    if ((fn & kOptimizerFn) || (file & kOptimDir) || ((fn & kStepFn) && (file & kOptimFile)))
        return FrameActivity::Optimizer;
    if (fn & kBackwardFn) return FrameActivity::Backward;
    if ((file & kModulePy) && (fn & kSetupFn)) return FrameActivity::ModuleSetup;
    if (((file & kNnModules) && (fn & kInitFn)) || (file & kNnInit))
        return FrameActivity::ModuleSetup;
    if (fn & kForwardFn) return FrameActivity::Forward;
    return FrameActivity::None;
}

// Lower = stronger when a stack holds several kinds of evidence.
int strength(FrameActivity a) {
    switch (a) {
        case FrameActivity::ZeroGrad:
            return 0;
        case FrameActivity::Optimizer:
            return 1;
        case FrameActivity::Backward:
            return 2;
        case FrameActivity::ModuleSetup:
            return 3;
        case FrameActivity::Forward:
            return 4;
        case FrameActivity::None:
            return 5;
    }
    return 5;
}

Stage stageOfKind(PhaseKind kind) {
    switch (kind) {
        case PhaseKind::Forward:
            return Stage::Forward;
        case PhaseKind::Backward:
        case PhaseKind::Recompute:
            return Stage::Backward;
        case PhaseKind::Optimizer:
            return Stage::Optimizer;
        default:
            return Stage::None;
    }
}

}  // namespace

bool isZeroGradName(std::string_view name) {
    return containsNoCase(name.substr(0, 256), "zero_grad");
}

bool isOptimizerStepName(std::string_view name) {
    return containsNoCase(name.substr(0, 16), "optimizer.step");
}

TrainingActivity::TrainingActivity(const Trace& trace)
    : trace_(trace),
      stack_memo_(trace.stackCount() + 1, 0),
      frame_memo_(trace.frames().size() + 1, 0),
      string_traits_(trace.strings.size() + 1, 0),
      phase_info_(trace.phases.size() + 1) {
    const size_t n = trace.phases.size();
    // Steps by start; each phase's step and innermost training stage.
    std::vector<uint32_t> steps;
    for (uint32_t id = 1; id <= n; ++id)
        if (trace.phases[id - 1].kind == PhaseKind::Step) steps.push_back(id);
    std::stable_sort(steps.begin(), steps.end(), [&](uint32_t a, uint32_t b) {
        return trace.phases[a - 1].start < trace.phases[b - 1].start;
    });
    std::vector<int32_t> ordinal(n + 1, -1);
    for (size_t i = 0; i < steps.size(); ++i) {
        ordinal[steps[i]] = int32_t(i);
        step_starts_.push_back(trace.phases[steps[i] - 1].start);
    }
    // Each name read once: the walk below visits a phase once per descendant.
    std::vector<uint8_t> zero_grad_name(n + 1, 0);
    for (uint32_t id = 1; id <= n; ++id)
        zero_grad_name[id] = isZeroGradName(trace.string(trace.phases[id - 1].name));
    for (uint32_t id = 1; id <= n; ++id) {
        PhaseInfo& info = phase_info_[id];
        uint32_t up = id;
        // Parents come before children (addPhase order), but a hostile file
        // may loop: the walk is bounded.
        for (int depth = 0; up != 0 && up <= n && depth < 64; ++depth) {
            const Phase& p = trace.phases[up - 1];
            if (info.stage == Stage::None) info.stage = stageOfKind(p.kind);
            info.recompute |= p.kind == PhaseKind::Recompute;
            if (p.kind == PhaseKind::Optimizer && info.optimizer == 0) info.optimizer = up;
            info.zero_grad |= zero_grad_name[up] != 0;
            if (p.kind == PhaseKind::Step) {
                info.step = ordinal[up];
                break;
            }
            up = p.parent.value;
        }
    }
    // A step's forward start: events of the step outside its sub-phases come
    // before it (inputs) or after it (what follows the optimizer).
    std::vector<int64_t> forward_start(n + 1, INT64_MAX);
    for (uint32_t id = 1; id <= n; ++id) {
        const Phase& p = trace.phases[id - 1];
        if (p.kind != PhaseKind::Forward) continue;
        uint32_t up = p.parent.value;
        for (int depth = 0; up != 0 && up <= n && depth < 64; ++depth) {
            if (trace.phases[up - 1].kind == PhaseKind::Step) {
                forward_start[up] = std::min(forward_start[up], p.start);
                break;
            }
            up = trace.phases[up - 1].parent.value;
        }
    }
    for (uint32_t id : steps) {
        phase_info_[id].forward_start = forward_start[id];
        step_forward_starts_.push_back(forward_start[id]);
    }
    if (!steps.empty())
        first_forward_start_ = forward_start[steps.front()] != INT64_MAX
                                   ? forward_start[steps.front()]
                                   : trace.phases[steps.front() - 1].start;
    std::vector<uint32_t> by_start;
    for (uint32_t id = 1; id <= n; ++id)
        if (stageOfKind(trace.phases[id - 1].kind) != Stage::None) by_start.push_back(id);
    std::stable_sort(by_start.begin(), by_start.end(), [&](uint32_t a, uint32_t b) {
        return trace.phases[a - 1].start < trace.phases[b - 1].start;
    });
    for (uint32_t id : by_start) {
        const Phase& p = trace.phases[id - 1];
        spans_.push_back({p.start, std::max(p.end, p.start + 1), stageOfKind(p.kind),
                          p.kind == PhaseKind::Recompute});
        span_devices_.push_back(p.device);
    }
    for (uint32_t id = 1; id <= n; ++id) {
        PhaseInfo& info = phase_info_[id];
        if (info.step >= 0 && info.forward_start == INT64_MAX)
            info.forward_start = phase_info_[steps[size_t(info.step)]].forward_start;
    }
    markRecordedOptimizerSteps(zero_grad_name);
}

void TrainingActivity::markRecordedOptimizerSteps(const std::vector<uint8_t>& zero_grad_name) {
    const size_t n = trace_.phases.size();
    optimizer_after_backward_.assign(step_starts_.size(), 0);
    for (uint32_t id = 1; id <= n; ++id) {
        const Phase& p = trace_.phases[id - 1];
        if (p.inferred || p.kind != PhaseKind::Optimizer || zero_grad_name[id]) continue;
        // Inside backward (an optimizer fused into it) it is not after it.
        bool in_backward = false;
        uint32_t up = p.parent.value;
        for (int depth = 0; up != 0 && up <= n && depth < 64; ++depth) {
            const PhaseKind k = trace_.phases[up - 1].kind;
            in_backward |= k == PhaseKind::Backward || k == PhaseKind::Recompute;
            up = trace_.phases[up - 1].parent.value;
        }
        if (in_backward) continue;
        if (insideBackwardSpan(p.start, std::max(p.end, p.start), p.device)) continue;
        // A recorded range outside the steps' tree takes its step by time.
        int32_t step = phase_info_[id].step;
        if (step < 0 && !step_starts_.empty() && p.start >= step_starts_.front())
            step = int32_t(std::upper_bound(step_starts_.begin(), step_starts_.end(), p.start) -
                           step_starts_.begin()) -
                   1;
        if (step >= 0 && size_t(step) < optimizer_after_backward_.size())
            optimizer_after_backward_[size_t(step)] = 1;
    }
}

FrameActivity TrainingActivity::classifyStack(StackId stack) {
    FrameActivity best = FrameActivity::None;
    for (FrameId f : trace_.stack(stack)) {
        if (f.value == 0 || f.value >= frame_memo_.size()) continue;
        uint8_t& memo = frame_memo_[f.value];
        if (memo == 0) {
            const Frame& frame = trace_.frame(f);
            memo = uint8_t(uint8_t(classifyFrame(traits(frame.function), traits(frame.file))) + 1);
        }
        const auto a = static_cast<FrameActivity>(memo - 1);
        if (strength(a) < strength(best)) best = a;
        if (best == FrameActivity::ZeroGrad) break;
    }
    return best;
}

uint16_t TrainingActivity::traits(StringId id) {
    if (id.value >= string_traits_.size()) return traitsOf(trace_.string(id));
    uint16_t& memo = string_traits_[id.value];
    if (memo == 0) memo = traitsOf(trace_.string(id));
    return memo;
}

FrameActivity TrainingActivity::ofStack(StackId stack) {
    if (stack.value == 0 || stack.value >= stack_memo_.size()) return FrameActivity::None;
    uint8_t& memo = stack_memo_[stack.value];
    if (memo == 0) memo = uint8_t(uint8_t(classifyStack(stack)) + 1);
    return static_cast<FrameActivity>(memo - 1);
}

const TrainingActivity::StageSpan* TrainingActivity::stageAt(int64_t time, int16_t device) const {
    auto it = std::upper_bound(spans_.begin(), spans_.end(), time,
                               [](int64_t t, const StageSpan& s) { return t < s.start; });
    // The innermost span holding `time` started last; nested spans are few
    // deep, so a short walk back finds it.
    for (int walked = 0; it != spans_.begin() && walked < 16; ++walked) {
        --it;
        const auto i = size_t(it - spans_.begin());
        if (time < it->end && (span_devices_[i] < 0 || span_devices_[i] == device)) return &*it;
    }
    return nullptr;
}

bool TrainingActivity::insideBackwardSpan(int64_t start, int64_t end, int16_t device) const {
    auto it = std::upper_bound(spans_.begin(), spans_.end(), start,
                               [](int64_t t, const StageSpan& s) { return t < s.start; });
    // As stageAt: nested spans are few deep. A backward inferred up to a
    // recorded optimizer step ends where it begins: only one that goes on
    // past the range's end holds it.
    for (int walked = 0; it != spans_.begin() && walked < 16; ++walked) {
        --it;
        const auto i = size_t(it - spans_.begin());
        if (it->stage == Stage::Backward && it->start < start && end < it->end &&
            (span_devices_[i] < 0 || device < 0 || span_devices_[i] == device))
            return true;
    }
    return false;
}

Position TrainingActivity::of(uint64_t event) {
    const Event& e = trace_.events[event];
    Position pos;
    if (e.phase.value != 0 && e.phase.value < phase_info_.size()) {
        const PhaseInfo& info = phase_info_[e.phase.value];
        pos.step = info.step;
        pos.stage = info.stage;
        pos.recompute = info.recompute;
        pos.zero_grad = info.zero_grad;
        pos.optimizer_phase = info.optimizer;
        if (info.optimizer != 0) pos.optimizer_end = trace_.phases[info.optimizer - 1].end;
    }
    // A recorded range outside the steps' tree (an optimizer's annotation, a
    // user's or DDP's range) takes its step and stage from the time.
    if (pos.step < 0 && !step_starts_.empty() && e.time >= step_starts_.front()) {
        const auto it = std::upper_bound(step_starts_.begin(), step_starts_.end(), e.time);
        pos.step = int32_t(it - step_starts_.begin()) - 1;
    }
    if (pos.stage == Stage::None && pos.step >= 0) {
        if (const StageSpan* s = stageAt(e.time, e.device)) {
            pos.stage = s->stage;
            pos.recompute = s->recompute;
        } else {
            pos.stage = e.time < step_forward_starts_[size_t(pos.step)] ? Stage::BeforeForward
                                                                        : Stage::Optimizer;
        }
    }
    switch (ofStack(e.stack)) {
        case FrameActivity::Optimizer:
        case FrameActivity::ZeroGrad:
            pos.stage = Stage::Optimizer;
            break;
        case FrameActivity::Backward:
            pos.stage = Stage::Backward;
            break;
        case FrameActivity::Forward:
            // A forward frame inside a recorded backward is recompute.
            if (pos.stage != Stage::Backward) pos.stage = Stage::Forward;
            break;
        default:
            break;
    }
    return pos;
}

}  // namespace memscope::detail
