#pragma once
// Helpers shared by the plugin tests: fixture paths, file bytes, summaries.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "memscope/analysis/summary.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope::test {

inline std::filesystem::path fixtures() {
    return MEMSCOPE_FIXTURES_DIR;
}

// The real traces live beside the repository (../shared/fixtures); a clone
// without them skips the tests that read them.
inline bool haveFixtures() {
    std::error_code ec;
    return std::filesystem::is_directory(fixtures(), ec);
}

}  // namespace memscope::test

// First statement of a test that reads the fixtures folder.
#define MEMSCOPE_SKIP_WITHOUT_FIXTURES()                                                          \
    do {                                                                                          \
        if (!::memscope::test::haveFixtures())                                                    \
            GTEST_SKIP() << "fixtures folder missing: " << ::memscope::test::fixtures().string(); \
    } while (false)

namespace memscope::test {

inline std::vector<std::byte> readBytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(c.size());
    for (size_t i = 0; i < c.size(); ++i) out[i] = std::byte(c[i]);
    return out;
}

inline std::filesystem::path tempPath(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() /
               ("memscope-plugin-tests-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir / name;
}

// A python interpreter that can import `module` ("" when none can): the one on
// PATH first, then the system's (Debian's python3-torch lives there).
inline std::string pythonWith(const std::string& module) {
    for (const char* python : {"python3", "/usr/bin/python3"}) {
        const std::string cmd =
            std::string(python) + " -c 'import " + module + "' > /dev/null 2>&1";
        if (std::system(cmd.c_str()) == 0) return python;
    }
    return {};
}

inline TraceSummary summaryOf(const Trace& trace) {
    auto tl = Timeline::build(trace);
    if (!tl) return {};
    return summarize(trace, **tl);
}

}  // namespace memscope::test
