#include "memscope/model/op_attribution.h"

#include "memscope/model/trace.h"

namespace memscope {

OpAttribution::OpAttribution(const Trace& trace)
    : source_(trace.ops.source), event_ops_(trace.ops.event_ops) {
    const std::vector<OpScope>& scopes = trace.ops.scopes;
    std::vector<detail::ScopeSpan> spans;
    spans.reserve(scopes.size());
    names_.reserve(scopes.size());
    for (const OpScope& s : scopes) {
        names_.push_back(s.name);
        // A helper nested in another op is looked through: its allocation is
        // the caller's (an empty span).
        const bool helper = s.depth > 0 && isAllocationHelperOp(trace.string(s.name));
        spans.push_back(helper ? detail::ScopeSpan{} : detail::ScopeSpan{s.start, s.end, s.depth});
    }
    innermost_ = detail::innermostScopes(spans);
}

std::optional<OpHit> OpAttribution::at(int64_t time) const {
    const uint32_t s = innermost_.at(time);
    if (s == 0) return std::nullopt;
    return OpHit{names_[s - 1], s - 1};
}

std::optional<OpHit> OpAttribution::ofEvent(uint64_t event, int64_t time) const {
    if (!event_ops_.empty()) {
        if (event >= event_ops_.size() || event_ops_[event].isNull()) return std::nullopt;
        return OpHit{event_ops_[event], std::nullopt};
    }
    return at(time);
}

}  // namespace memscope
