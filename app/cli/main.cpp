// memscope-cli: the headless front end (servers, CI). Subcommands and their
// options are declared with CLI11; each command lives in its own file.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "memscope/base/huge_page_malloc.h"
#include "memscope/base/units.h"

namespace memscope::cli {

CLI::Validator byteSizeValidator() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            auto parsed = parseByteSize(text);
            return parsed ? std::string() : parsed.message();
        },
        "SIZE", "byte size");
}

}  // namespace memscope::cli

int main(int argc, char** argv) {
    // Large loads in huge pages; executes this program again (huge_page_malloc.h).
    memscope::useHugePageMalloc(argv);
    using namespace memscope::cli;
    escapeStandardStreams();
    CLI::App app{"memscope-cli: memory timelines of deep-learning training, headless",
                 "memscope-cli"};
    app.set_version_flag("--version", std::string("memscope-cli ") + MEMSCOPE_VERSION);
    app.require_subcommand(1);
    app.get_formatter()->column_width(34);
    const std::vector<Command> commands = {addSummary(app), addCompare(app), addCheck(app),
                                           addConvert(app), addRecord(app),  addWhatIf(app),
                                           addDigest(app),  addStacks(app),  addLeaks(app),
                                           addAttach(app),  addDetach(app),  addTop(app)};
    // The command after `record` keeps its own options away from CLI11.
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args.front() == "record") {
        std::vector<std::string> command;
        splitRecordCommand(args, 1, command);
        for (const Command& c : commands)
            if (c.take_command) c.take_command(std::move(command));
    }
    std::reverse(args.begin(), args.end());  // CLI11 takes the words last first
    try {
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        // Help and version are "errors" that exit 0; usage errors exit 1,
        // except check's, whose 1 means "over the limit".
        const int code = app.exit(e);
        if (code == 0) return 0;
        for (const Command& c : commands)
            if (c.app->parsed() && c.app->get_name() == "check") return 2;
        return 1;
    }
    for (const Command& c : commands)
        if (c.app->parsed()) return c.run();
    return 1;
}
