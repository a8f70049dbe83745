#pragma once
// Traces built by hand for the GUI tests, with numbers known in advance.

#include <QString>
#include <QStringList>
#include <string>

#include "memscope/model/trace.h"

namespace memscope::guitest {

// Four events on cuda:0 (times 10..50), peak 400 bytes at t = 20:
//   A: 100 B activation at 0x1000, t 10..30, stack {forward (model.py:12), PyEval_EvalFrame (ceval.c:1)}
//   B: 300 B gradient   at 0x2000, t 20..50, stack {backward (engine.py:7)}
//   C:  50 B temporary  at 0x3000, t 40..,  no stack
// One segment 0x1000..0x5000 allocated at t 5. Phases: step 0 [5, 60):
// forward [5, 25), backward [25, 55).
Trace makeSimpleTrace();

// A trainer-like run of `steps` steps: parameters, optimizer state, per-block
// activations whose size and recomputation depend on the policy ("full",
// "block", "selective", "opt-in-bwd"), with Step/Forward/Backward/Optimizer/
// Block/Recompute phases and recorded run metrics (policy, step and recompute times).
Trace makeTrainerLikeTrace(const std::string& policy, int steps = 3);

// Writes a native trace; returns the path, or an empty string on failure.
QString writeTrace(const Trace& trace, const QString& path);

// The real traces beside the repository (MEMSCOPE_FIXTURES_DIR), and whether
// that folder exists: a clone without ../shared skips the tests that read it.
QString fixturesDir();
bool haveFixtures();

}  // namespace memscope::guitest
