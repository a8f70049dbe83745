#pragma once
// Copies events, stacks, streams and the allocator state of one trace into
// another, re-interning every id (private to core: the recording merge).

#include <vector>

#include "memscope/model/trace.h"

namespace memscope {

class TraceCopier {
public:
    TraceCopier(const Trace& from, Trace& to);

    StringId string(StringId id);
    StackId stack(StackId id);
    uint32_t stream(uint32_t index);
    // The event with its ids in `to`'s tables; its phase is cleared (phases
    // are assigned again after the merge).
    Event event(const Event& e);
    AllocatorState allocatorState();
    PhaseId phase(PhaseId id);  // copies the phase and its parents

private:
    FrameId frame(FrameId id);

    const Trace& from_;
    Trace& to_;
    std::vector<StringId> strings_;
    std::vector<FrameId> frames_;
    std::vector<StackId> stacks_;
    std::vector<uint32_t> streams_;
    std::vector<PhaseId> phases_;
    std::vector<bool> stack_done_;
};

}  // namespace memscope
