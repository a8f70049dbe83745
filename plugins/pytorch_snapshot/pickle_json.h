#pragma once
// A pickle value as JSON text, depth and length limited: how a snapshot's
// values that memscope does not model are kept (metadata, attributes).

#include <cstddef>
#include <string>

#include "pickle_machine.h"

namespace memscope::pytorch_snapshot {

std::string renderJson(pickle::Machine& m, const pickle::Value& v, int depth = 8,
                       size_t max_text = 64 * 1024);

}  // namespace memscope::pytorch_snapshot
