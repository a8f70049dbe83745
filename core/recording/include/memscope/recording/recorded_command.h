#pragma once
// The command a recorded run ran, read back from its trace so that the job
// can be recorded again with a checkpointing policy applied (`memscope-cli
// record --apply POLICY --from RUN -o DIR -- COMMAND...`, the GUI's "Record
// with this policy"). The recorders keep it in the trace's metadata: the
// CUPTI tracer as "argv" (a JSON list of strings, exact) beside "command"
// (the arguments joined by spaces, for people); the Python hook only as
// "command" (sys.orig_argv joined by spaces). Neither quotes, so "command"
// alone splits back exactly only when no argument held a space: the answer
// says which it is. No recorder keeps the working directory yet; "cwd" is
// read when one does.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"

namespace memscope {

struct RecordedCommand {
    std::vector<std::string> argv;
    // From "argv" (exact), or split from "command" at its spaces (an
    // argument that held a space comes back as two).
    bool exact = false;
    // The folder the job ran in ("cwd"); none: not recorded.
    std::optional<std::string> working_dir = std::nullopt;
};

// An error a user can act on when the trace keeps no command (it was not
// recorded by `memscope-cli record`), or what it keeps cannot be read.
Result<RecordedCommand> recordedCommand(const TraceMetadata& metadata);

// The arguments after the program for `memscope-cli record --apply POLICY
// --from RUN_FILE -o OUT_DIR -- COMMAND...`; "--" keeps the job's own
// options away from record's.
std::vector<std::string> recordApplyArguments(std::string_view policy, std::string_view run_file,
                                              std::string_view out_dir,
                                              const std::vector<std::string>& command);

// A folder name for a run recorded with `policy` applied:
// "applied-<policy>-<stamp>", the policy's characters other than letters,
// digits, '.', '-' and '_' made '_' ("layers:0-2+opt-in-bwd" ->
// "applied-layers_0-2_opt-in-bwd-20261207-160501"), at most 80 of them.
std::string appliedRunFolderName(std::string_view policy, std::string_view stamp);

}  // namespace memscope
