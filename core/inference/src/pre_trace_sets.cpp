#include "pre_trace_sets.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "text_match.h"
#include "training_activity.h"

namespace memscope::detail {
namespace {

// Sizes as the caching allocator rounds them (multiples of 512 bytes): a
// trace may give a tensor's request or its rounded size.
uint64_t sizeClass(uint64_t size) {
    return size <= 512 ? 512 : (size + 511) / 512 * 512;
}

// The frameless blocks alive from before the trace (inferBlockCategories
// left them AliveThroughout), by size, by address within a size: parameters
// are made before the optimizer's state, so lower addresses of a size are the
// likelier parameters (which of the same-size blocks is which, no trace says;
// the bytes of each kind it does). A block can be larger than its request
// (the allocator did not split off a remainder too small to reuse): the
// request is the tensor's size, as the trace's allocations give it.
std::map<uint64_t, std::vector<size_t>> framelessBySize(
    const Trace& trace, const std::vector<InferredCategory>& blocks) {
    std::map<uint64_t, std::vector<size_t>> by_size;
    const auto& all = trace.allocator_state->blocks;
    for (size_t i = 0; i < blocks.size() && i < all.size(); ++i)
        if (blocks[i].rule == CategoryRule::AliveThroughout && all[i].stack.isNull())
            by_size[sizeClass(all[i].requested_size ? all[i].requested_size : all[i].size)]
                .push_back(i);
    for (auto& [size, members] : by_size)
        std::sort(members.begin(), members.end(),
                  [&](size_t a, size_t b) { return all[a].address < all[b].address; });
    return by_size;
}

// The tensors an optimizer keeps per parameter, from the class its recorded
// ranges name ("Optimizer.step#AdamW.step", "Optimizer.zero_grad#SGD.zero_grad");
// 0 when no range names a known one.
size_t stateTensorsPerParameter(const Trace& trace) {
    for (const Phase& p : trace.phases) {
        if (p.inferred || p.kind != PhaseKind::Optimizer) continue;
        const std::string_view name = trace.string(p.name).substr(0, 128);
        const size_t hash = name.find('#');
        if (!startsWithNoCase(name, "optimizer.") || hash == std::string_view::npos) continue;
        const std::string_view cls = name.substr(hash);  // "#AdamW.step", "#SGD.zero_grad"
        if (containsNoCase(cls, "adam")) return 2;       // Adam, AdamW, NAdam, RAdam, Adamax
        for (const char* one : {"sgd", "rmsprop", "adagrad", "lion"})
            if (containsNoCase(cls, one)) return 1;
    }
    return 0;
}

// How many same-size frameless blocks each parameter has (2: parameter and
// gradient, 3: and momentum, 4: and Adam's two moments): `named` (from the
// optimizer's class; 0 unknown) where the counts of the sizes holding 90% of
// the bytes are multiples of it; else the largest multiple that holds for
// 90% of the bytes (several same-size parameters make counts that several
// divide: 2 of a shape under momentum are 6 blocks), else the one most bytes
// agree on; 0 when none fits.
size_t setSizeFromCounts(const std::map<uint64_t, std::vector<size_t>>& by_size, size_t named) {
    std::array<double, 5> votes{};
    double all = 0;
    for (const auto& [size, members] : by_size) {
        const double bytes = double(size) * double(members.size());
        all += bytes;
        for (size_t per = 2; per <= 4; ++per)
            if (!members.empty() && members.size() % per == 0) votes[per] += bytes;
    }
    if (all == 0) return named;
    if (named >= 2 && named <= 4 && votes[named] >= 0.9 * all) return named;
    for (size_t per = 4; per >= 2; --per)
        if (votes[per] >= 0.9 * all) return per;
    size_t best = 0;
    for (size_t per = 4; per >= 2; --per)
        if (votes[per] > 0 && (best == 0 || votes[per] > votes[best])) best = per;
    return best;
}

// No gradient is born or freed in the trace, yet it trains (zero_grad
// without set_to_none keeps the gradients, zeroed in place): the frameless
// blocks of a size are its parameters and their gradients, and the
// optimizer's tensors unless the trace made those anew (a user's optimizer
// assigning new moments each step: `state_made` counts them per size, one
// step's worth). The optimizer's class says how many tensors it keeps per
// parameter. What fits no such sets stays unknown; a trace without the
// optimizer's recorded ranges keeps what it had.
void splitWithoutGradients(const Trace& trace, const std::map<uint64_t, size_t>& state_made,
                           std::vector<InferredCategory>& blocks) {
    // Training is shown by the optimizer's recorded ranges; steps found by
    // repetition alone may be inference passes, whose long-lived blocks are
    // the weights (they keep AliveThroughout).
    const bool trains = std::any_of(trace.phases.begin(), trace.phases.end(), [](const Phase& p) {
        return p.kind == PhaseKind::Optimizer && !p.inferred;
    });
    if (!trains) return;
    const auto by_size = framelessBySize(trace, blocks);
    // Blocks per parameter before the trace: the optimizer's class says
    // (parameter, gradient and its state tensors) unless the blocks' counts
    // disagree (a class it does not know, a name that misleads): then the
    // multiplicity most bytes agree on.
    const size_t named = stateTensorsPerParameter(trace);
    const size_t sets = setSizeFromCounts(by_size, named ? named + 2 : 0);
    const size_t states = sets >= 2 ? sets - 2 : named;
    for (const auto& [size, members] : by_size) {
        // Parameters of this size, and blocks per parameter before the trace.
        size_t params = 0, per = 0;
        if (const auto made = state_made.find(size); made != state_made.end() && states) {
            params = made->second / states;
            per = params && members.size() % params == 0 ? members.size() / params : 0;
            if (per > 2) per = 0;  // parameter and gradient at most
        } else if (sets && state_made.empty()) {
            per = sets;
            params = members.size() / per;
        }
        for (size_t k = 0; k < members.size(); ++k) {
            InferredCategory& c = blocks[members[k]];
            if (per == 0 || params == 0 || k >= params * per)
                c = {Category::Unknown, CategoryRule::Weak};
            else if (k < params)
                c = {Category::Parameter, CategoryRule::ParameterOfSet};
            else if (k < 2 * params)
                c = {Category::Gradient, CategoryRule::GradientKeptOfSet};
            else
                c = {Category::OptimizerState,
                     states == 2 ? CategoryRule::AdamStateOfSet : CategoryRule::MomentumStateOfSet};
        }
    }
}

}  // namespace

// History switched on after warm-up: the parameters and the optimizer's
// state were alive before the first event, without frames. Each gradient the
// trace shows (born in backward, or freed by the first zero_grad) stands for
// one parameter of its size; Adam-like optimizers keep two more tensors of
// that size, SGD with momentum one. So the frameless blocks of a size come in
// sets of 1, 2 or 3 per gradient: one is the parameter, the rest optimizer
// state. A size whose blocks do not come in such sets stays unknown: calling
// them parameters would be a guess. Without any gradient, see
// splitWithoutGradients.
void splitPreTraceSets(const Trace& trace, TrainingActivity& activity,
                       std::vector<InferredCategory>& blocks) {
    if (!trace.allocator_state || blocks.empty()) return;
    // Gradients per size: the most any one step (or the first zero_grad) shows.
    std::map<std::pair<int32_t, uint64_t>, size_t> by_step, state_by_step;
    std::map<uint64_t, size_t> freed_by_zero_grad, gradients, state_made;
    for (uint64_t i = 0; i < trace.inferred_categories.size(); ++i)
        if (trace.inferred_categories[i].category == Category::OptimizerState &&
            trace.events[i].kind == EventKind::Alloc)
            ++state_by_step[{activity.of(i).step, sizeClass(trace.events[i].size)}];
    for (const auto& [key, n] : state_by_step)
        state_made[key.second] = std::max(state_made[key.second], n);
    for (uint64_t i = 0; i < trace.inferred_categories.size(); ++i) {
        const InferredCategory& c = trace.inferred_categories[i];
        if (c.category != Category::Gradient) continue;
        const Event& e = trace.events[i];
        if (c.rule == CategoryRule::GradientFreedByZeroGrad)
            ++freed_by_zero_grad[sizeClass(e.size)];
        else if (e.kind == EventKind::Alloc)
            ++by_step[{activity.of(i).step, sizeClass(e.size)}];
    }
    for (const auto& [key, n] : by_step) gradients[key.second] = std::max(gradients[key.second], n);
    for (const auto& [size, n] : freed_by_zero_grad) gradients[size] = std::max(gradients[size], n);
    if (gradients.empty()) {
        splitWithoutGradients(trace, state_made, blocks);
        return;
    }
    const auto by_size = framelessBySize(trace, blocks);
    // The optimizer's multiplicity (blocks per parameter) is the same for
    // every parameter: the one most bytes agree on decides where a size's
    // gradient count is off (a gradient born in a recompute, counted as its
    // activation).
    auto ratio = [&](uint64_t size, size_t blocks_of_size) -> size_t {
        const auto g = gradients.find(size);
        if (g == gradients.end() || blocks_of_size % g->second) return 0;
        const size_t r = blocks_of_size / g->second;
        return r >= 1 && r <= 3 ? r : 0;
    };
    std::array<double, 4> votes{};
    for (const auto& [size, members] : by_size)
        votes[ratio(size, members.size())] += double(size) * double(members.size());
    size_t common = 0;
    for (size_t r = 1; r <= 3; ++r)
        if (votes[r] > 0 && (common == 0 || votes[r] > votes[common])) common = r;
    for (const auto& [size, members] : by_size) {
        // Sets of `per` blocks, one parameter each; a block left over (an
        // input or a buffer of the same size) stays unknown.
        size_t per = 0;
        if (gradients.count(size) && common)
            per = common;
        else
            per = ratio(size, members.size());
        const size_t params = per ? members.size() / per : 0;
        for (size_t k = 0; k < members.size(); ++k) {
            InferredCategory& c = blocks[members[k]];
            if (per == 0 || k >= params * per)
                c = {Category::Unknown, CategoryRule::Weak};
            else if (k < params)
                c = {Category::Parameter, CategoryRule::ParameterOfSet};
            else
                c = {Category::OptimizerState,
                     per == 3 ? CategoryRule::AdamStateOfSet : CategoryRule::MomentumStateOfSet};
        }
    }
}

}  // namespace memscope::detail
