// memscope-cli: the headless front end (servers, CI).
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"

namespace {

using memscope::cli::Command;

constexpr std::array kCommands = {
    Command{"summary", "summary FILE... [--json]   peak, live and reserved bytes per device",
            memscope::cli::runSummary},
    Command{"convert", "convert IN OUT [--to FORMAT]   any importer to any exporter",
            memscope::cli::runConvert},
    Command{"record", "record [-o DIR] [--tensor-level] [--stacks] [--vmm] -- CMD ARGS...   trace a CUDA program",
            memscope::cli::runRecord},
};

void printHelp(std::FILE* out) {
    std::fprintf(out,
                 "memscope-cli: memory timelines of deep-learning training, headless\n\n"
                 "usage: memscope-cli COMMAND [ARGS...]\n       memscope-cli COMMAND --help\n\n"
                 "commands:\n");
    for (const Command& c : kCommands) std::fprintf(out, "  %.*s\n", int(c.synopsis.size()), c.synopsis.data());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        printHelp(stderr);
        return 1;
    }
    const std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        printHelp(stdout);
        return 0;
    }
    if (name == "--version") {
        std::printf("memscope-cli %s\n", MEMSCOPE_VERSION);
        return 0;
    }
    const std::vector<std::string> args(argv + 2, argv + argc);
    for (const Command& c : kCommands)
        if (c.name == name) return c.run(args);
    std::fprintf(stderr, "memscope-cli: unknown command '%s' (see memscope-cli --help)\n", name.c_str());
    return 1;
}
