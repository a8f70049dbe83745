#pragma once
// Runs the command being recorded: fork/exec with extra environment, signals
// forwarded, and its exit status as a shell would report it.

#include <string>
#include <utility>
#include <vector>

#include "memscope/base/result.h"

namespace memscope::cli {

using Environment = std::vector<std::pair<std::string, std::string>>;

// The command's exit code (128 + signal when a signal ended it), or an error
// when it could not be started at all.
Result<int> runRecordedCommand(const std::vector<std::string>& command, const Environment& set);

}  // namespace memscope::cli
