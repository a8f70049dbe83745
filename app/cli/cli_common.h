#pragma once
// What the CLI's commands share: the process's plugin registry (its plugin
// errors printed once), opening a file or folder with progress on stderr, and
// the warnings that came with it.

#include <string>
#include <vector>

#include "memscope/model/run_name.h"
#include "memscope/open/open_run.h"
#include "memscope/open/plugin_registry.h"
#include "memscope/ranks/rank_run.h"

namespace memscope::cli {

// Every byte the CLI prints goes through terminalText (text_escape.h):
// stdout and stderr are replaced by streams that show control characters
// (ESC, BEL, CR, C1) as escapes and replace invalid UTF-8, keeping newlines
// and tabs, so a string from a file can neither set the terminal's title nor
// clear its screen, whichever command prints it. Call first in main.
void escapeStandardStreams();
// Progress on stderr: "\rTEXT", and the line cleared again; the only
// control characters the CLI writes, past the escaping streams.
void showProgress(const std::string& text);
void clearProgress();

// Built-ins plus the plugin folders; problems loading a folder's plugins are
// printed to stderr once, the first time.
const PluginRegistry& registry();

// openRun with progress on stderr when it is a terminal and the input is big.
Result<OpenedRun> openWithProgress(const std::string& path, const OpenOptions& options = {});

// A folder of more than one trace: a multi-rank run, which summary and check
// read rank by rank in bounded memory (openRanksWithProgress) instead of
// keeping every rank's timeline.
bool isMultiRankFolder(const std::string& path);

// openRanks (open_ranks.h) on every core, with progress on stderr when it is a
// terminal. Each rank that could not be read is printed to stderr.
Result<RankRun> openRanksWithProgress(const char* command, const std::string& path);

// A run's name, pid and path, for distinctRunNames (run_name.h): a file by
// its trace's name (else its stem); a folder by its name, its ranks' pids
// being several.
RunLabel runLabel(const OpenedTrace& part);
RunLabel runLabel(const OpenedRun& run);

// "memscope-cli CMD: warning: PATH: MESSAGE" for each warning of a run.
void printWarnings(const char* command, const OpenedRun& run);

// Prints what part of the run a trace holds, when `record --steps` or
// `--capture-range` cut it (nothing otherwise).
void printRecordedRange(const Trace& trace, const char* indent);

}  // namespace memscope::cli
