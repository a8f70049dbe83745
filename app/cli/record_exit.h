#pragma once
// memscope-cli record's exit codes, besides the recorded command's own.

namespace memscope::cli {

// record did not run the command: bad usage of its options (as for every
// command), no output folder it can write, no recorder found, or the command
// could not be started.
inline constexpr int kRecordNotRun = 1;
// record --merge DIR: DIR does not exist or holds nothing to merge, or the
// options make no sense with --merge (a command, -o).
inline constexpr int kMergeUsageError = 2;
// The command exited 0 but its recording could not be finished (its parts
// are kept: `record --merge DIR`); also --merge when something could not be
// merged. A command that failed returns its own code instead.
inline constexpr int kRecordingFailed = 3;
// The command exited 0 but the policy `record --apply` asked for was not
// applied (the hook refused it, or no process ran the model): its trace is
// the job as it is, never shown as the policy's.
inline constexpr int kApplyRefused = 4;

}  // namespace memscope::cli
