#pragma once
// Traces built by hand for the analysis tests, so every expected number is known.

#include <string>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope_test/event_builder.h"

namespace memscope::testutil {

using testsupport::makeEvent;

// An event with its phase and device (tests/support's builder, positionally).
inline Event event(int64_t t, EventKind k, uint64_t addr, uint64_t size, Category c,
                   PhaseId phase = {}, int16_t device = 0) {
    return makeEvent(t, k, addr, size, c).phase(phase).device(device);
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

// A full-save run with a chain of layers, for the what-if simulator: layers
// h.0–h.3 (recorded module scopes, root "GPT"), each saving 1000 B for
// backward, with a 200 B temporary and a 100 B output per step, then a 50 B
// head; gradients of 300 B per layer freed by the optimizer, whose 1200 B
// scratch is a temporary and whose state (2 x 300 B per layer) is born in the
// first optimizer step. Steps are kLayeredStepLen ns apart from kLayeredT0:
// forward [0, 4000), backward [4000, 8000), optimizer [8000, 9000).
inline constexpr int kLayers = 4;
inline constexpr int64_t kLayeredStepLen = 10000;
inline constexpr int64_t kLayeredT0 = 1000;
Trace layeredFullSaveRun(int steps = 2, const std::string& policy = "full");

// An OOM of fragmentation under PyTorch's defaults on device 0: a 270 MiB
// tensor freed, four 5 MiB ones carved from its cached block and two freed,
// then 255 MiB asked for with 30 MiB left on the device (300 MiB for the
// allocator). The cache holds 260 MiB free; its largest block is 250 MiB.
Trace fragmentedOom();

// A run of `steps` steps of 1 ms on device 0 (clock in ns from 1e18) with
// recorded module scopes (blocks.0-3 of 1 MiB saved activations each, a
// `head` of 2 MiB logits), 8 MiB of parameters, 8 MiB of gradients per step
// freed by the optimizer, 16 MiB of optimizer state born in the first step,
// a 4 MiB workspace kept from the first step, and what the options add: the
// logits kept (preds.append(logits.detach()), 2 MiB a step, site
// "forward  (/home/me/model.py:50)"), a hook storing blocks.3's output
// (0.5 MiB a step, site "save_output  (/home/me/train.py:20)"), a cache
// filled by 1 MiB in each of the first four steps and then kept.
struct LeakyOptions {
    bool keep_logits = false;
    bool hook_stores = false;
    bool plateau_cache = true;
    int steps = 10;
    bool modules = true;
};
Trace leakyRun(const LeakyOptions& options);

}  // namespace memscope::testutil
