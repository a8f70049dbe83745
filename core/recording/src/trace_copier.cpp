#include "trace_copier.h"

namespace memscope {

TraceCopier::TraceCopier(const Trace& from, Trace& to)
    : from_(from),
      to_(to),
      strings_(from.strings.size()),
      frames_(from.frames().size() + 1),
      stacks_(from.stackCount()),
      streams_(from.streams.size(), UINT32_MAX),
      phases_(from.phases.size() + 1),
      stack_done_(from.stackCount(), false) {}

StringId TraceCopier::string(StringId id) {
    if (id.isNull() || id.value >= strings_.size()) return StringId();
    StringId& mapped = strings_[id.value];
    if (mapped.isNull()) mapped = to_.internString(from_.string(id));
    return mapped;
}

FrameId TraceCopier::frame(FrameId id) {
    if (id.isNull() || id.value >= frames_.size()) return FrameId();
    FrameId& mapped = frames_[id.value];
    if (mapped.isNull()) {
        const Frame& f = from_.frame(id);
        mapped = to_.internFrame(Frame{string(f.function), string(f.file), f.line});
    }
    return mapped;
}

StackId TraceCopier::stack(StackId id) {
    if (id.isNull() || id.value >= stacks_.size()) return StackId();
    if (!stack_done_[id.value]) {
        std::vector<FrameId> frames;
        for (FrameId f : from_.stack(id)) frames.push_back(frame(f));
        stacks_[id.value] = to_.internStack(frames);
        stack_done_[id.value] = true;
    }
    return stacks_[id.value];
}

uint32_t TraceCopier::stream(uint32_t index) {
    if (index >= streams_.size()) return 0;
    uint32_t& mapped = streams_[index];
    if (mapped == UINT32_MAX) mapped = to_.internStream(from_.streams[index]);
    return mapped;
}

Event TraceCopier::event(const Event& e) {
    Event out = e;
    out.stack = stack(e.stack);
    out.stream = stream(e.stream);
    out.phase = PhaseId();
    return out;
}

PhaseId TraceCopier::phase(PhaseId id) {
    if (id.isNull() || id.value >= phases_.size()) return PhaseId();
    if (!phases_[id.value].isNull()) return phases_[id.value];
    Phase p = from_.phases[id.value - 1];
    // Parents come first in a trace's phase list, so this recursion is
    // shallow; a malformed forward reference is cut.
    p.parent = p.parent.value < id.value ? phase(p.parent) : PhaseId();
    p.name = string(p.name);
    phases_[id.value] = to_.addPhase(p);
    return phases_[id.value];
}

AllocatorState TraceCopier::allocatorState() {
    AllocatorState state;
    if (!from_.allocator_state) return state;
    state = *from_.allocator_state;
    for (Segment& s : state.segments) s.stack = stack(s.stack);
    for (Block& b : state.blocks) b.stack = stack(b.stack);
    return state;
}

}  // namespace memscope
