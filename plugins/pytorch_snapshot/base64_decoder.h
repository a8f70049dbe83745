#pragma once
// A bounded, streaming base64 decoder (RFC 4648's standard alphabet) for the
// payload a MemoryViz HTML page embeds. Whitespace is skipped anywhere, and so
// is the backslash of a JSON-escaped slash ("\/"), since the payload sits in a
// JSON string; anything else outside the alphabet is an error naming the byte
// and its offset. Text is fed in pieces so that the caller can release what it
// has read (the page is mapped, the decoded bytes are not).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memscope/base/result.h"

namespace memscope::pytorch_snapshot {

class Base64Decoder {
public:
    // Decoded bytes are appended to `out`; more than `max_output` is an error.
    Base64Decoder(std::vector<std::byte>& out, uint64_t max_output);

    // The next piece of text; offsets in errors count from the first piece.
    Result<void> feed(std::span<const std::byte> text);
    // After the last piece: a partial group of 4 characters means the text was
    // cut short.
    Result<void> finish();

    uint64_t consumed() const { return offset_; }

private:
    Result<void> badByte(std::byte b) const;

    std::vector<std::byte>& out_;
    uint64_t max_output_;
    uint64_t offset_ = 0;  // characters seen so far, whitespace included
    uint32_t group_ = 0;   // bits of the current group of 4 characters
    int have_ = 0;         // characters of the current group
    int padding_ = 0;      // '=' seen; only more '=' and whitespace may follow
    bool escape_ = false;  // a backslash that must be followed by '/'
};

}  // namespace memscope::pytorch_snapshot
