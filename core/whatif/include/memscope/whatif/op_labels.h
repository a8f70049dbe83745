#pragma once
// Which op made an allocation, where a producer says so: a Range phase named
// after the op kind ("matmul", "attention": the save:OPS vocabulary of
// checkpoint_policy.h) around the op. The reference trainer labels its linear
// layers and its attention core this way, so that the what-if simulator can
// predict save lists and selective recomputation from a full-save run.

#include <cstdint>
#include <string_view>

#include "memscope/analysis/checkpoint_policy.h"
#include "memscope/model/trace.h"

namespace memscope {

// The phase name of an op kind: "matmul", "attention"; "" for anything else.
std::string_view opLabel(SaveOp op);

// The op kind (a SaveOp bit) a phase's name gives, "matmul" or a path ending
// in it ("step 2 / forward / block 3 / matmul"); 0 for any other name.
uint32_t opKindOfPhaseName(std::string_view name);

// The op kinds (SaveOp bits) of the Range phases enclosing `phase` (itself
// included): 0 when no enclosing phase names an op. A bounded walk.
uint32_t opKindsAt(const Trace& trace, PhaseId phase);

// Whether any recorded phase of the trace names an op kind.
bool hasOpLabels(const Trace& trace);

}  // namespace memscope
