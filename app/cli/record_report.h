#pragma once
// After `record`: which trace files the run wrote, and a short summary of
// each (events, phases, peaks per device, gaps).

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace memscope::cli {

// Trace files in `dir` as they are before the run, to tell the new ones apart.
using DirectoryState = std::map<std::string, std::filesystem::file_time_type>;
DirectoryState traceFilesIn(const std::filesystem::path& dir);

// Files written or rewritten since `before`, sorted by name.
std::vector<std::filesystem::path> newTraceFiles(const std::filesystem::path& dir,
                                                 const DirectoryState& before);

// Prints the summary of one trace on stdout; false (and a line on stderr)
// when it cannot be loaded.
bool printRecordedTrace(const std::filesystem::path& file);

}  // namespace memscope::cli
