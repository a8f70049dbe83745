#pragma once
// The innermost of nested time ranges at each instant, as a piecewise-constant
// function: what ModuleAttribution and OpAttribution share. Scopes may
// overlap without nesting (hostile or multi-threaded input); the innermost is
// then the one that started last, ties broken by `rank` (deeper first).

#include <cstdint>
#include <vector>

namespace memscope::detail {

struct ScopeSpan {
    int64_t start = 0;
    int64_t end = 0;  // exclusive
    uint32_t rank = 0;
};

// From bounds[i] up to bounds[i + 1] the innermost span is scope_of[i]
// (index into the spans + 1; 0 = none). Spans with end <= start are left out.
struct InnermostScopes {
    std::vector<int64_t> bounds;
    std::vector<uint32_t> scope_of;
    // The innermost span at `time` (index + 1), 0 outside every span.
    uint32_t at(int64_t time) const;
};
InnermostScopes innermostScopes(const std::vector<ScopeSpan>& spans);

}  // namespace memscope::detail
