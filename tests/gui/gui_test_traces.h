#pragma once
// Traces built by hand for the GUI tests, with numbers known in advance.

#include <QString>
#include <QStringList>
#include <string>

#include "memscope/model/trace.h"

namespace memscope::guitest {

// Four events on cuda:0 (times 10..50), peak 400 bytes at t = 20:
//   A: 100 B activation at 0x1000, t 10..30, stack {forward (model.py:12), PyEval_EvalFrame
//   (ceval.c:1)} B: 300 B gradient   at 0x2000, t 20..50, stack {backward (engine.py:7)} C:  50 B
//   temporary  at 0x3000, t 40..,  no stack
// One segment 0x1000..0x5000 allocated at t 5. Phases: step 0 [5, 60):
// forward [5, 25), backward [25, 55).
Trace makeSimpleTrace();

// A trainer-like run of `steps` steps: parameters, optimizer state, per-block
// activations whose size and recomputation depend on the policy ("full",
// "block", "selective", "opt-in-bwd"), with Step/Forward/Backward/Optimizer/
// Block/Recompute phases and recorded run metrics (policy, step and recompute times).
Trace makeTrainerLikeTrace(const std::string& policy, int steps = 3);

// A two-block model "GPT" with recorded module scopes, times 1..80, on cuda:0:
//   P  1000 B parameter   t 1..     outside every module
//   A0a 200 B activation  t 12..80  h.0.attn   (h.0 runs [10, 30), attn [10, 20))
//   A0m 300 B activation  t 22..75  h.0.mlp    (mlp [20, 30))
//   T0   50 B temporary   t 25..26  h.0.mlp
//   A1a 400 B activation  t 32..70  h.1.attn   (h.1 runs [30, 50), attn [30, 40))
//   A1m 100 B activation  t 45..65  h.1.mlp    (mlp [40, 50))
//   L   250 B activation  t 52..60  lm_head    ([50, 55))
//   R0  150 B activation  t 63..78  h.0, recompute scope [62, 68)
// Peak 2250 B at t 52: outside 1000, h.0 500, h.1 500, lm_head 250.
// `h1Scale` multiplies h.1's activations (a candidate for compare tests);
// `source` Inferred marks the scopes inferred.
Trace makeModuleTrace(int h1Scale = 1, ModuleSource source = ModuleSource::Recorded);
inline constexpr int64_t kModulePeakTime = 52;
inline constexpr int64_t kModulePeakBytes = 2250;

// A GPT-like run with recorded module scopes, for screenshots and sums:
// `layers` blocks h.k (attn, mlp), wte and lm_head; each step's forward
// saves activations per block, backward (module backward scopes) frees them
// in reverse and makes gradients; parameters and optimizer state are outside.
Trace makeModuleTrainingTrace(int layers = 6, int steps = 2);

// A measured full-save run for the what-if ("mlp full", recorded policy
// "full", 10 ms steps): 4 layers "h.0" … "h.3" (recorded module scopes,
// siblings under "h"), each saving a 3 MiB inner activation and a 1 MiB
// output in its forward, both freed in its backward; parameters, gradients
// and optimizer state outside; Step/Forward/Backward/Optimizer phases.
Trace makeWhatIfSourceTrace(int steps = 3);

// Writes a native trace; returns the path, or an empty string on failure.
QString writeTrace(const Trace& trace, const QString& path);

// The real traces beside the repository (MEMSCOPE_FIXTURES_DIR), and whether
// that folder exists: a clone without ../shared skips the tests that read it.
QString fixturesDir();
bool haveFixtures();

}  // namespace memscope::guitest
