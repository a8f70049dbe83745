// useHugePageMalloc: the program runs again with glibc's huge-page malloc
// (its large blocks advised for huge pages), keeps its arguments, and sees
// GLIBC_TUNABLES exactly as the user set it, or unset; a user's own hugetlb
// setting, MEMSCOPE_HUGE_PAGES=0, valgrind and a start by the dynamic loader
// leave it alone. Each case runs memscope_huge_page_probe (huge_page_probe.cpp)
// with its own environment.
#include "memscope/base/huge_page_malloc.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#if defined(__linux__) && defined(__GLIBC__)
#include <gnu/libc-version.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace memscope {
namespace {

#if defined(__linux__) && defined(__GLIBC__)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Why the probe cannot relaunch here, or empty when it should.
std::string whyNoRelaunch() {
    if (kSanitized) return "a sanitizer build (its allocator is not glibc's)";
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    const std::string modes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (modes.find("[madvise]") == std::string::npos)
        return "transparent huge pages are not in madvise mode here ('" + modes + "')";
    unsigned major = 0, minor = 0;
    std::sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor);
    if (major == 2 && minor < 35) return "glibc older than 2.35";
    return {};
}

using Env = std::map<std::string, std::string>;

// Runs the probe (or `program`) with exactly `env` and `args`, returns its
// key=value lines.
std::optional<std::map<std::string, std::string>> probe(
    const Env& env, const std::vector<std::string>& args = {},
    std::string program = MEMSCOPE_HUGE_PAGE_PROBE) {
    std::vector<std::string> env_text;
    for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_text) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> words = {program};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : words) argv.push_back(s.data());
    argv.push_back(nullptr);

    int out[2];
    if (pipe(out) != 0) return std::nullopt;
    const pid_t pid = fork();
    if (pid < 0) return std::nullopt;
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execve(program.c_str(), argv.data(), envp.data());
        _exit(127);
    }
    close(out[1]);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
    std::map<std::string, std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (const auto eq = line.find('='); eq != std::string::npos)
            lines[line.substr(0, eq)] = line.substr(eq + 1);
    return lines;
}

TEST(HugePageMalloc, RelaunchesWithHugePagesKeepingArgumentsAndAnUnsetEnvironment) {
    const std::string why = whyNoRelaunch();
    const auto out = probe({{"PATH", "/usr/bin:/bin"}}, {"one", "two words", ""});
    ASSERT_TRUE(out);
    EXPECT_EQ(out->at("args"), "one|two words|");
    EXPECT_EQ(out->at("tunables"), "<unset>");
    EXPECT_EQ(out->at("marker"), "unset");
    if (!why.empty()) {
        EXPECT_EQ(out->at("state"), "not");
        GTEST_SKIP() << "no relaunch expected: " << why;
    }
    EXPECT_EQ(out->at("state"), "relaunched");
    EXPECT_EQ(out->at("advised"), "yes");
}

TEST(HugePageMalloc, PutsTheUsersTunablesBackExactly) {
    if (const std::string why = whyNoRelaunch(); !why.empty()) GTEST_SKIP() << why;
    for (const std::string before : {"glibc.malloc.tcache_count=7", ""}) {
        const auto out = probe({{"GLIBC_TUNABLES", before}});
        ASSERT_TRUE(out);
        EXPECT_EQ(out->at("state"), "relaunched") << "GLIBC_TUNABLES='" << before << "'";
        EXPECT_EQ(out->at("tunables"), before);
        EXPECT_EQ(out->at("marker"), "unset");
        EXPECT_EQ(out->at("advised"), "yes");
    }
}

TEST(HugePageMalloc, LeavesTheProgramAloneWhenTurnedOffOrTheUserChose) {
    auto out = probe({{"MEMSCOPE_HUGE_PAGES", "0"}});
    ASSERT_TRUE(out);
    EXPECT_EQ(out->at("state"), "not");
    EXPECT_EQ(out->at("tunables"), "<unset>");

    out = probe({{"GLIBC_TUNABLES", "glibc.malloc.hugetlb=0"}});
    ASSERT_TRUE(out);
    EXPECT_EQ(out->at("state"), "not");
    EXPECT_EQ(out->at("tunables"), "glibc.malloc.hugetlb=0");
    if (whyNoRelaunch().empty()) {
        EXPECT_EQ(out->at("advised"), "no");
    }
}

TEST(HugePageMalloc, LeavesAProgramUnderValgrindOrStartedByTheLoaderAlone) {
    // Valgrind preloads its vgpreload libraries; a missing one is only a
    // warning of the loader's, which is enough to look like valgrind.
    auto out = probe({{"LD_PRELOAD", "/nonexistent/vgpreload_memcheck-amd64-linux.so"}});
    ASSERT_TRUE(out);
    EXPECT_EQ(out->at("state"), "not");

    // `ld-linux-x86-64.so.2 PROGRAM`: /proc/self/exe is the loader.
    const std::string loader = "/lib64/ld-linux-x86-64.so.2";
    if (access(loader.c_str(), X_OK) != 0) GTEST_SKIP() << loader << " is not here";
    out = probe({}, {MEMSCOPE_HUGE_PAGE_PROBE, "after"}, loader);
    ASSERT_TRUE(out);
    EXPECT_EQ(out->at("state"), "not");
    EXPECT_EQ(out->at("args"), "after");
}

TEST(HugePageMalloc, ANotRelaunchedProcessSaysSo) {
    EXPECT_EQ(hugePageMalloc(), HugePageMalloc::NotRelaunched);  // the test's main never calls it
}

#endif

}  // namespace
}  // namespace memscope
