#pragma once
// Subcommands of memscope-cli. Each lives in its own file: it declares its
// options on a CLI11 subcommand and returns the function that runs it once
// the command line is parsed.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace memscope::cli {

// Runs a parsed subcommand; returns the process exit code.
using CommandRun = std::function<int()>;

struct Command {
    CLI::App* app = nullptr;
    CommandRun run;
    // For record: receives the words of the command to run, which main splits
    // off before CLI11 sees them (they carry options of their own).
    std::function<void(std::vector<std::string>)> take_command;
};

// record's own words and the command's: everything from the first word that
// is not one of record's options (or after "--") is the command's.
void splitRecordCommand(std::vector<std::string>& args, size_t first,
                        std::vector<std::string>& command);

Command addSummary(CLI::App& parent);
Command addConvert(CLI::App& parent);
Command addRecord(CLI::App& parent);
Command addCompare(CLI::App& parent);
Command addCheck(CLI::App& parent);
Command addWhatIf(CLI::App& parent);
Command addDigest(CLI::App& parent);
Command addStacks(CLI::App& parent);
Command addLeaks(CLI::App& parent);
Command addAttach(CLI::App& parent);
Command addDetach(CLI::App& parent);
Command addTop(CLI::App& parent);

// A size option's validator: "7.5GiB", "800MB", plain bytes.
CLI::Validator byteSizeValidator();

}  // namespace memscope::cli
