#pragma once
// The what-if (memscope/whatif/whatif.h) as `memscope-cli whatif` prints it.

#include <optional>
#include <span>
#include <string>

#include "memscope/whatif/advisor.h"
#include "memscope/whatif/whatif.h"

namespace memscope {

// The table for a person and the JSON of `memscope-cli whatif --json`;
// `written_traces` is parallel to the rows: the file each prediction was
// written to, "" for none. With the advisor's answer (`advice`), the budget
// names its choice, and the advisor's search is shown (advice_report.h).
std::string whatIfText(const WhatIfReport& report, const std::optional<WhatIfBudget>& budget,
                       const Advice* advice = nullptr);
std::string whatIfJson(const WhatIfReport& report, const std::optional<WhatIfBudget>& budget,
                       std::span<const std::string> written_traces, const Advice* advice = nullptr);

}  // namespace memscope
