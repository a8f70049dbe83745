#pragma once
// Runs the command being recorded: fork/exec with extra environment, signals
// passed on to it once (signal_relay.h), and its exit status as a shell would
// report it.

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "memscope/base/result.h"

namespace memscope::cli {

using Environment = std::vector<std::pair<std::string, std::string>>;

// The command's exit code (128 + signal when a signal ended it), or an error
// when it could not be started at all. `started` is called with the
// command's pid once it runs (while record's signals are still blocked, so a
// thread it starts never takes them).
Result<int> runRecordedCommand(const std::vector<std::string>& command, const Environment& set,
                               const std::function<void(pid_t)>& started = {});

}  // namespace memscope::cli
