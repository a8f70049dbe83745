#include <cstdio>

#include "commands.h"

namespace memscope::cli {

// Placeholder until the record command lands; says so rather than pretending.
int runRecord(std::span<const std::string>) {
    std::fprintf(stderr, "memscope-cli record: not available in this build yet\n");
    return 1;
}

}  // namespace memscope::cli
