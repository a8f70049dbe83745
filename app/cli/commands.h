#pragma once
// Subcommands of memscope-cli. Each lives in its own file and is listed once in
// main.cpp's command table.

#include <span>
#include <string>
#include <string_view>

namespace memscope::cli {

// args: the words after the subcommand's name. Returns the process exit code:
// 0 success, 1 usage error, 2 a bad input file (others still processed).
using CommandFn = int (*)(std::span<const std::string> args);

struct Command {
    std::string_view name;
    std::string_view synopsis;  // one line for the top-level --help
    CommandFn run;
};

int runSummary(std::span<const std::string> args);
int runConvert(std::span<const std::string> args);
int runRecord(std::span<const std::string> args);

}  // namespace memscope::cli
