#pragma once
// The advisor's answer (memscope/whatif/advisor.h) as `memscope-cli whatif
// --budget` and `--frontier` print it: the chosen mix, its predicted peak and
// step time, how far it is from the best uniform policy; or the frontier.

#include <string>

#include "memscope/whatif/advisor.h"

namespace memscope {

std::string adviceText(const Advice& advice);
// The "advisor" object of whatif's JSON (docs/JSON_REFERENCE.md).
std::string adviceJson(const Advice& advice);

}  // namespace memscope
