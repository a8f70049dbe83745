#pragma once
// One value on the unpickler's stack, in its memo or in a container: plain
// values inline, containers by index, converted objects by their trace id.

#include <cstdint>

namespace memscope::pickle {

enum class Tag : uint8_t {
    None,
    Bool,
    Int,
    UInt,
    Float,
    Str,
    Bytes,
    Ref,    // a container: bits = index, aux = generation
    Frame,  // a frame dict already interned: bits = FrameId
    Stack,  // a frames list already interned: bits = StackId
    Dead,   // an object that was consumed and freed
    Unset,  // memo slot never written (never on the stack)
    Entry,  // a trace entry dict already converted: bits = event index
    // A trace entry read whole and still being mapped on another thread:
    // bits = its sequence number there. Only in the memo; what reads it
    // takes it as an Entry (the handler resolves it where the two differ).
    Pending,
};

struct Value {
    Tag tag = Tag::None;
    uint32_t aux = 0;   // Str/Bytes: length; Ref: generation
    uint64_t bits = 0;  // Int/UInt/Bool: the value; Float: IEEE bits; Str/Bytes: input offset

    bool isInt() const { return tag == Tag::Int || tag == Tag::UInt || tag == Tag::Bool; }
    // Integers as the unsigned 64-bit pattern: the C++ pickler writes addresses as
    // signed, so a negative value maps back to the pointer it was.
    uint64_t asU64() const { return bits; }
    int64_t asI64() const { return int64_t(bits); }
    bool isNegative() const { return tag == Tag::Int && int64_t(bits) < 0; }
    double asDouble() const;
};
static_assert(sizeof(Value) == 16);

}  // namespace memscope::pickle
