#include <cstdio>

#include "commands.h"

namespace memscope::cli {

// Placeholder until the convert command lands; says so rather than pretending.
int runConvert(std::span<const std::string>) {
    std::fprintf(stderr, "memscope-cli convert: not available in this build yet\n");
    return 1;
}

}  // namespace memscope::cli
