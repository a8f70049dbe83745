#include "memscope/base/huge_page_malloc.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "memscope/base/transparent_huge_pages.h"

#if defined(__linux__) && defined(__GLIBC__)
#include <gnu/libc-version.h>
#include <unistd.h>
#define MEMSCOPE_HUGE_PAGE_MALLOC 1
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_MEMORY__)
#undef MEMSCOPE_HUGE_PAGE_MALLOC
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#undef MEMSCOPE_HUGE_PAGE_MALLOC
#endif
#endif

namespace memscope {
namespace {

constexpr const char* kTunables = "GLIBC_TUNABLES";
constexpr const char* kSetting = "glibc.malloc.hugetlb=1";
constexpr const char* kSwitch = "MEMSCOPE_HUGE_PAGES";
// Set for the relaunched process only: what GLIBC_TUNABLES was before, "="
// and the value, or "-" when it was unset. Its presence also says that the
// exec happened, so that a glibc that ignores the tunable cannot loop.
constexpr const char* kBefore = "MEMSCOPE_GLIBC_TUNABLES_BEFORE";

HugePageMalloc g_state = HugePageMalloc::NotRelaunched;

#ifdef MEMSCOPE_HUGE_PAGE_MALLOC
// glibc.malloc.hugetlb arrived in glibc 2.35.
bool glibcHasTheTunable() {
    unsigned major = 0, minor = 0;
    if (std::sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor) != 2) return false;
    return major > 2 || (major == 2 && minor >= 35);
}

// The program's file, or empty where executing it again would not run this
// program as it was started: under valgrind (its malloc is its own, and an
// exec would leave the program running outside it) or when the dynamic
// loader was started by name with the program as its argument (the exec
// would start the loader with the wrong arguments).
std::string programToRelaunch() {
    if (const char* preload = std::getenv("LD_PRELOAD");
        preload && std::strstr(preload, "vgpreload"))
        return {};
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return {};
    std::string exe(path, size_t(n));
    const std::string name = exe.substr(exe.rfind('/') + 1);
    if (name.rfind("ld-", 0) == 0 || name.rfind("ld.so", 0) == 0) return {};
    return exe;
}

void restore(const char* before) {
    if (before[0] == '=')
        setenv(kTunables, before + 1, 1);
    else
        unsetenv(kTunables);
    unsetenv(kBefore);
}
#endif

}  // namespace

void useHugePageMalloc(char** argv) {
#ifdef MEMSCOPE_HUGE_PAGE_MALLOC
    if (const char* before = std::getenv(kBefore)) {
        // The relaunched process: the tunable has been read; the environment
        // goes back to what the user gave, for the programs started from here.
        restore(before);
        g_state = HugePageMalloc::Relaunched;
        return;
    }
    if (const char* on = std::getenv(kSwitch); on && std::string_view(on) == "0") return;
    const char* tunables = std::getenv(kTunables);
    if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb=")) return;
    if (!argv || !argv[0] || transparentHugePages() != TransparentHugePages::Madvise ||
        !glibcHasTheTunable())
        return;
    const std::string program = programToRelaunch();
    if (program.empty()) return;

    const std::string before = tunables ? std::string("=") + tunables : std::string("-");
    const std::string with =
        tunables && *tunables ? std::string(tunables) + ":" + kSetting : std::string(kSetting);
    if (setenv(kBefore, before.c_str(), 1) != 0) return;
    if (setenv(kTunables, with.c_str(), 1) != 0) {
        restore(before.c_str());
        return;
    }
    std::fflush(nullptr);
    execv(program.c_str(), argv);
    restore(before.c_str());  // the exec failed: go on as started
#else
    (void)argv;
#endif
}

HugePageMalloc hugePageMalloc() {
    return g_state;
}

}  // namespace memscope
