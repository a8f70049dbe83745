#pragma once
// Traces built by hand for the analysis tests, so every expected number is known.

#include <string>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::testutil {

inline Event event(int64_t t, EventKind k, uint64_t addr, uint64_t size, Category c,
                   PhaseId phase = {}, int16_t device = 0) {
    Event e;
    e.time = t;
    e.kind = k;
    e.address = addr;
    e.size = size;
    e.category = c;
    e.phase = phase;
    e.device = device;
    return e;
}

// An event of one category (an activation unless said), for the tests that
// care only about sizes and times.
inline Event ev(int64_t t, EventKind k, uint64_t addr, uint64_t size,
                Category c = Category::Activation) {
    return event(t, k, addr, size, c);
}

// A training-like run on device 0, clock in ns from 1e18: parameters (1000 B)
// before the first step, then `steps` steps of forward (activations `act` B,
// a temporary of 50 B), backward (frees the activations, gradients 1000 B,
// a recompute of `recompute` B inside it) and optimizer (state 2000 B in
// the first step, a temporary of 300 B). Every event carries its phase.
Trace trainingRun(const std::string& name, const std::string& policy, uint64_t act,
                  uint64_t recompute = 0, int steps = 2, bool optimizer_in_backward = false);

// Two steps of `len` ns each starting at 1000; forward takes the first 40%,
// backward the next 50%. One activation of 100 bytes lives through each forward.
Trace makeRun(int64_t len, std::string name);

// A trace holding one stack, as PyTorch records them with stacks="all"
// (innermost first): allocator, dispatcher and interpreter frames, torch's own
// Python, and the user's model.py (frames[7]) and train.py (frames[9]).
struct Stacked {
    Trace trace;
    std::vector<FrameId> frames;
    StackId stack;
};
Stacked realisticStack();

}  // namespace memscope::testutil
