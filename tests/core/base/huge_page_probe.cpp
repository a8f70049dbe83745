// memscope_huge_page_probe: calls useHugePageMalloc as a program's main does,
// then prints what the process runs with, one "key=value" per line:
//   state      relaunched | not
//   tunables   GLIBC_TUNABLES as the process sees it now, or <unset>
//   marker     whether the relaunch's marker variable is still set
//   advised    whether a fresh 64 MiB malloc block is advised for huge pages
//              (its mapping's VmFlags hold "hg"), or "unknown"
//   args       the arguments after the program's name, joined by '|'
// For huge_page_malloc_test.cpp.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "memscope/base/huge_page_malloc.h"

namespace {

// The VmFlags of the mapping that holds `p`, from /proc/self/smaps.
std::string vmFlagsAt(const void* p) {
    const auto at = reinterpret_cast<uintptr_t>(p);
    std::ifstream in("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        unsigned long long begin = 0, end = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2 &&
            line.find(':') > line.find(' ')) {
            inside = at >= begin && at < end;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8);
    }
    return {};
}

}  // namespace

int main(int argc, char** argv) {
    memscope::useHugePageMalloc(argv);
    const bool relaunched = memscope::hugePageMalloc() == memscope::HugePageMalloc::Relaunched;
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    std::printf("state=%s\n", relaunched ? "relaunched" : "not");
    std::printf("tunables=%s\n", tunables ? tunables : "<unset>");
    std::printf("marker=%s\n", std::getenv("MEMSCOPE_GLIBC_TUNABLES_BEFORE") ? "set" : "unset");
    void* block = std::malloc(size_t(64) << 20);
    const std::string flags = block ? vmFlagsAt(block) : std::string();
    std::printf("advised=%s\n", flags.empty()                            ? "unknown"
                                : flags.find(" hg") != std::string::npos ? "yes"
                                                                         : "no");
    std::free(block);
    std::string args;
    for (int i = 1; i < argc; ++i) args += (i > 1 ? "|" : "") + std::string(argv[i]);
    std::printf("args=%s\n", args.c_str());
    return 0;
}
