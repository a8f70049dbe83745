#pragma once
// The one event builder the tests share: an Event from what happened, when,
// where and how big (and its category), the other fields by name where a test
// cares about them:
//   const Event e = makeEvent(1000, EventKind::Alloc, 0x1000, 512, Category::Activation)
//                       .stack(s)
//                       .device(1);
// Fields not set keep Event's defaults (no stack, no phase, stream 0, device 0).

#include <cstdint>

#include "memscope/model/event.h"

namespace memscope::testsupport {

class EventBuilder {
public:
    EventBuilder(int64_t time, EventKind kind, uint64_t address, uint64_t size, Category category) {
        e_.time = time;
        e_.kind = kind;
        e_.address = address;
        e_.size = size;
        e_.category = category;
    }
    EventBuilder& stack(StackId stack) {
        e_.stack = stack;
        return *this;
    }
    EventBuilder& phase(PhaseId phase) {
        e_.phase = phase;
        return *this;
    }
    EventBuilder& stream(uint32_t stream) {
        e_.stream = stream;
        return *this;
    }
    EventBuilder& device(int16_t device) {
        e_.device = device;
        return *this;
    }
    operator Event() const { return e_; }  // NOLINT(google-explicit-constructor): the point

private:
    Event e_;
};

inline EventBuilder makeEvent(int64_t time, EventKind kind, uint64_t address, uint64_t size,
                              Category category = Category::Unknown) {
    return {time, kind, address, size, category};
}

}  // namespace memscope::testsupport
