#include "base64_decoder.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace memscope::pytorch_snapshot {
namespace {

constexpr uint8_t kBad = 0xff, kSpace = 0x40, kPad = 0x41, kEscape = 0x42;

constexpr std::array<uint8_t, 256> makeTable() {
    std::array<uint8_t, 256> t{};
    for (auto& v : t) v = kBad;
    constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (uint8_t i = 0; i < 64; ++i) t[uint8_t(kAlphabet[i])] = i;
    for (char c : {' ', '\t', '\r', '\n', '\f', '\v'}) t[uint8_t(c)] = kSpace;
    t[uint8_t('=')] = kPad;
    t[uint8_t('\\')] = kEscape;
    return t;
}
constexpr std::array<uint8_t, 256> kTable = makeTable();

}  // namespace

Base64Decoder::Base64Decoder(std::vector<std::byte>& out, uint64_t max_output)
    : out_(out), max_output_(max_output) {}

Result<void> Base64Decoder::badByte(std::byte b) const {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", unsigned(b));
    const auto c = char(b);
    const std::string shown =
        c >= 0x21 && c <= 0x7e ? "'" + std::string(1, c) + "' (" + hex + ")" : std::string(hex);
    return makeError("the base64 payload has " + shown + " at character " +
                     std::to_string(offset_) +
                     ", which is not base64 (only A-Z, a-z, 0-9, '+', '/', '=' and whitespace "
                     "are); the page was probably edited or damaged");
}

Result<void> Base64Decoder::feed(std::span<const std::byte> text) {
    // Room for every character being data, at most what the limit allows;
    // written through a pointer and trimmed once, not pushed byte by byte.
    const size_t start = out_.size();
    const uint64_t room = max_output_ > start ? max_output_ - start : 0;
    const uint64_t bound = text.size() / 4 * 3 + 3;
    out_.resize(start + size_t(std::min(room, bound)));
    std::byte* const first = out_.data() + start;
    std::byte* w = first;
    std::byte* const last = out_.data() + out_.size();
    auto emit = [&](int n) -> bool {
        if (last - w < n) return false;
        for (int i = 0; i < n; ++i) *w++ = std::byte(uint8_t(group_ >> (16 - 8 * i)));
        return true;
    };
    auto tooBig = [&]() {
        out_.resize(size_t(w - out_.data()));
        return makeError("the embedded snapshot is larger than the limit of " +
                         std::to_string(max_output_) + " bytes; it was not decoded");
    };
    for (const std::byte b : text) {
        const uint8_t v = kTable[uint8_t(b)];
        if (escape_) {
            // Only "\/" is a JSON escape that can stand for a base64 character.
            if (b != std::byte('/')) {
                out_.resize(size_t(w - out_.data()));
                return badByte(std::byte('\\'));
            }
            escape_ = false;
        } else if (v == kSpace) {
            ++offset_;
            continue;
        } else if (v == kEscape) {
            escape_ = true;
            ++offset_;
            continue;
        }
        const uint8_t bits = v;
        if (bits == kBad) {
            out_.resize(size_t(w - out_.data()));
            return badByte(b);
        }
        if (bits == kPad) {
            if (have_ < 2 || have_ + padding_ >= 4) {
                out_.resize(size_t(w - out_.data()));
                return makeError("the base64 payload has a misplaced '=' at character " +
                                 std::to_string(offset_));
            }
            if (have_ + ++padding_ == 4 && !emit(have_ - 1)) return tooBig();
        } else {
            if (padding_) {
                out_.resize(size_t(w - out_.data()));
                return makeError("the base64 payload goes on after its '=' padding, at character " +
                                 std::to_string(offset_));
            }
            group_ |= uint32_t(bits) << (18 - 6 * have_);
            if (++have_ == 4) {
                if (!emit(3)) return tooBig();
                group_ = 0;
                have_ = 0;
            }
        }
        ++offset_;
    }
    out_.resize(size_t(w - out_.data()));
    return {};
}

Result<void> Base64Decoder::finish() {
    if (escape_) return makeError("the base64 payload ends in a lone backslash");
    if (have_ != 0 && have_ + padding_ != 4)
        return makeError("the base64 payload is cut short: it ends in the middle of a group (" +
                         std::to_string(have_) +
                         " of 4 characters); the page was probably truncated");
    return {};
}

}  // namespace memscope::pytorch_snapshot
