#include "snapshot_phase_names.h"

#include <cctype>
#include <charconv>
#include <string>

namespace memscope::pytorch_snapshot {
namespace {

// The number that ends `s` ("block 3", "ProfilerStep#12"), or -1.
int32_t trailingNumber(std::string_view s) {
    size_t i = s.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(s[i - 1]))) --i;
    int32_t n = -1;
    if (i == s.size() || std::from_chars(s.data() + i, s.data() + s.size(), n).ec != std::errc())
        return -1;
    return n;
}

}  // namespace

PhaseGuess classifyPhase(std::string_view name) {
    // The last component of a path name ("step 0 / backward / block 3"), as
    // memscope-train and record_function scopes name them.
    if (const size_t slash = name.rfind(" / "); slash != std::string_view::npos)
        name = name.substr(slash + 3);
    std::string lower(name.substr(0, 96));
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    const std::string_view s = lower;
    auto numbered = [&](std::string_view prefix) {
        if (!s.starts_with(prefix) || s.size() == prefix.size()) return -1;
        const int32_t n = trailingNumber(s);
        return n >= 0 && s.size() - prefix.size() == std::to_string(n).size() ? n : -1;
    };
    PhaseGuess g;
    if (s == "forward") {
        g.kind = PhaseKind::Forward;
    } else if (s == "backward") {
        g.kind = PhaseKind::Backward;
    } else if (s.starts_with("optimizer") || s.starts_with("adam ")) {
        g.kind = PhaseKind::Optimizer;  // "adam <param>": memscope-train's per-parameter update
    } else if (const int32_t step = std::max(numbered("step "), numbered("profilerstep#"));
               step >= 0) {
        g.kind = PhaseKind::Step;
        g.step = step;
    } else if (s.starts_with("recompute")) {
        g.kind = PhaseKind::Recompute;  // "recompute block 3", "recompute attention 3"
        g.block = trailingNumber(s);
    } else if (const int32_t block = numbered("block "); block >= 0) {
        g.kind = PhaseKind::Block;
        g.block = block;
    }
    return g;
}

}  // namespace memscope::pytorch_snapshot
