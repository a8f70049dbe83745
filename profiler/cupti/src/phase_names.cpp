#include "phase_names.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

namespace memscope::cupti {
namespace {

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// The first run of digits after the prefix: "step 3", "step_12", "step:7".
int32_t trailingNumber(std::string_view s) {
    const auto digit = std::find_if(
        s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (digit == s.end()) return -1;
    int32_t value = -1;
    std::from_chars(&*digit, s.data() + s.size(), value);
    return value;
}

}  // namespace

PhaseGuess classifyPhaseName(std::string_view name) {
    // Lower-case a bounded copy: names can be long (emit_nvtx op signatures).
    std::string lower(name.substr(0, 64));
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::string_view s = lower;

    PhaseGuess guess;
    if (startsWith(s, "step") || startsWith(s, "train_step") || startsWith(s, "iteration")) {
        guess.kind = PhaseKind::Step;
        guess.step = trailingNumber(s);
    } else if (startsWith(s, "forward") || s == "fwd") {
        guess.kind = PhaseKind::Forward;
    } else if (startsWith(s, "backward") || s == "bwd") {
        guess.kind = PhaseKind::Backward;
    } else if (startsWith(s, "optim") || startsWith(s, "optimizer")) {
        guess.kind = PhaseKind::Optimizer;
    } else if (startsWith(s, "recompute")) {
        guess.kind = PhaseKind::Recompute;
    }
    return guess;
}

}  // namespace memscope::cupti
