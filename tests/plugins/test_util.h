#pragma once
// Helpers shared by the plugin tests: fixture paths, file bytes, summaries.

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "memscope/summary.h"
#include "memscope/timeline.h"
#include "memscope/trace.h"

namespace memscope::test {

inline std::filesystem::path fixtures() { return MEMSCOPE_FIXTURES_DIR; }

inline std::vector<std::byte> readBytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(c.size());
    for (size_t i = 0; i < c.size(); ++i) out[i] = std::byte(c[i]);
    return out;
}

inline std::filesystem::path tempPath(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / ("memscope-plugin-tests-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir / name;
}

inline TraceSummary summaryOf(const Trace& trace) {
    auto tl = Timeline::build(trace);
    if (!tl) return {};
    return summarize(trace, **tl);
}

}  // namespace memscope::test
