#pragma once
// Which op made an allocation: the innermost op scope running when it was
// made, allocation helpers nested in another op looked through
// (op_scopes.h). The one rule every view and analysis uses, built once per
// trace, as ModuleAttribution is for modules.

#include <cstdint>
#include <optional>
#include <vector>

#include "memscope/model/innermost_scopes.h"
#include "memscope/model/op_scopes.h"

namespace memscope {

class Trace;

struct OpHit {
    StringId name;  // "aten::addmm"
    // Index into Trace::ops.scopes; none for an op inferred per event.
    std::optional<uint32_t> scope;
};

class OpAttribution {
public:
    OpAttribution() = default;
    // O(S log S) in the number of scopes; scopes that end before they start
    // are left out.
    explicit OpAttribution(const Trace& trace);

    // The innermost usable scope holding `time` (start <= time < end): the
    // one that started last, the deeper on a tie. nullopt outside every op.
    std::optional<OpHit> at(int64_t time) const;
    // The op that made event `event` (an index into Trace::events, made at
    // `time`): its inferred op where ops were inferred per event, else at(time).
    std::optional<OpHit> ofEvent(uint64_t event, int64_t time) const;

    OpSource source() const { return source_; }
    bool empty() const { return innermost_.scope_of.empty() && event_ops_.empty(); }

private:
    OpSource source_ = OpSource::None;
    detail::InnermostScopes innermost_;
    std::vector<StringId> names_;      // by scope index
    std::vector<StringId> event_ops_;  // Trace::ops.event_ops
};

}  // namespace memscope
