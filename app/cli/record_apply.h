#pragma once
// record --apply POLICY [--from RUN]: the policy resolved onto the modules of
// the recording RUN (core's policy_modules.h) and written as the apply plan
// (apply_plan.h) that the Python hook applies to the job. Everything that can
// be wrong is found here, before the job runs.

#include <filesystem>
#include <string>

#include "memscope/base/result.h"

namespace memscope::cli {

inline constexpr const char* kApplyPlanFileName = "apply-plan.json";

// Writes DIR/apply-plan.json for `policy`; its absolute path. `from` is the
// recording the policy's layers refer to ("" when not given; only opt-in-bwd
// alone needs none).
Result<std::filesystem::path> writeApplyPlan(const std::string& policy, const std::string& from,
                                             const std::filesystem::path& dir);

}  // namespace memscope::cli

namespace memscope::cli {

// What the job's processes made of `policy` (their hook.json's "apply"),
// read before the merge removes the hook folder, and said: on stdout where it
// was applied, on stderr where it was refused or never used. True when some
// process applied it and none refused it.
bool reportApplied(const std::filesystem::path& dir, const std::string& policy);

}  // namespace memscope::cli
