#pragma once
// Varint and zigzag primitives of the native format, with a bounded reader:
// every read checks the remaining bytes and latches a failure instead of
// reading past the end, so decoders check once per item, not per byte.
//
// Varints are prefix varints (docs/FORMAT.md): a value below 2^56 takes n
// bytes (n = 1..8, 7 bits each, as LEB128), stored as the little-endian
// n-byte word (value << n) | (1 << (n - 1)), so the first byte's trailing
// zeros give the length; larger values are 0x00 then 8 bytes little-endian.
// Same size as LEB128, but decoding needs no loop: one load, a count of
// trailing zeros and two shifts.

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace memscope::native {

inline uint64_t zigzag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t v) {
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

inline constexpr size_t kMaxVarintBytes = 9;

// The payload bits of an n-byte varint's 8-byte load, by n - 1: a table load
// takes fewer instructions than building the mask, and the events decoding
// loop is bound by its instruction count.
inline constexpr uint64_t kVarintMask[8] = {
    0xff,         0xffff,         0xffffff,         0xffffffff,
    0xffffffffff, 0xffffffffffff, 0xffffffffffffff, ~uint64_t{0}};

inline void storeLE64(unsigned char* p, uint64_t v) {
    if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) v = __builtin_bswap64(v);
    std::memcpy(p, &v, 8);
}
inline uint64_t loadLE64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) v = __builtin_bswap64(v);
    return v;
}

// One varint at p, p advanced past it; p must have 9 readable bytes. One
// 8-byte load, a count of trailing zeros and a mask: no loop.
inline uint64_t readVarintUnchecked(const unsigned char*& p) {
    const uint64_t x = loadLE64(p);
    if (x & 0xff) [[likely]] {
        const auto t = static_cast<unsigned>(__builtin_ctzll(x));  // length - 1
        p += t + 1;
        return (x & kVarintMask[t]) >> (t + 1);
    }
    p += 9;
    return loadLE64(p - 8);
}

// Writes a varint at `p`, which must have 9 bytes of room (writes up to 8 bytes
// past the varint's end: scratch space); returns the varint's end.
inline unsigned char* putVarint(unsigned char* p, uint64_t v) {
    const int bits = 64 - __builtin_clzll(v | 1);
    const int n = (bits + 6) / 7;
    if (n > 8) {
        p[0] = 0;
        storeLE64(p + 1, v);
        return p + 9;
    }
    storeLE64(p, v << n | uint64_t{1} << (n - 1));
    return p + n;
}

class ByteWriter {
public:
    explicit ByteWriter(std::vector<unsigned char>& out) : out_(out) {}

    void varint(uint64_t v) {
        unsigned char buf[kMaxVarintBytes + 8];
        unsigned char* end = putVarint(buf, v);
        out_.insert(out_.end(), buf, end);
    }
    void svarint(int64_t v) { varint(zigzag(v)); }
    void byte(uint8_t v) { out_.push_back(v); }
    void bytes(const void* data, size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        out_.insert(out_.end(), p, p + n);
    }
    // Length-prefixed text.
    void text(std::string_view s) {
        varint(s.size());
        bytes(s.data(), s.size());
    }
    size_t size() const { return out_.size(); }

private:
    std::vector<unsigned char>& out_;
};

class ByteReader {
public:
    ByteReader(const unsigned char* begin, const unsigned char* end) : p_(begin), end_(end) {}

    bool failed() const { return failed_; }
    bool atEnd() const { return p_ == end_; }
    size_t remaining() const { return static_cast<size_t>(end_ - p_); }
    const unsigned char* position() const { return p_; }

    uint64_t varint() {
        // Away from the end, one load decodes it (readVarintUnchecked).
        if (remaining() >= kMaxVarintBytes) [[likely]]
            return readVarintUnchecked(p_);
        if (p_ == end_) return fail();
        const unsigned char first = *p_;
        const size_t n = first == 0 ? 9 : static_cast<size_t>(__builtin_ctz(first)) + 1;
        if (n > remaining()) return fail();
        uint64_t v = 0;
        if (n == 9) {
            v = loadLE64(p_ + 1);
        } else {
            for (size_t i = n; i-- > 0;) v = v << 8 | p_[i];
            v >>= n;
        }
        p_ += n;
        return v;
    }
    int64_t svarint() { return unzigzag(varint()); }
    uint8_t byte() {
        if (p_ == end_) return static_cast<uint8_t>(fail());
        return *p_++;
    }
    // A varint that must fit `limit` (inclusive); larger values latch failure.
    uint64_t varintAtMost(uint64_t limit) {
        const uint64_t v = varint();
        if (v > limit) return fail();
        return v;
    }
    std::string_view text() {
        const uint64_t n = varint();
        if (failed_ || n > remaining()) {
            fail();
            return {};
        }
        std::string_view s(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
        p_ += n;
        return s;
    }
    // A sub-range of n bytes (a column); empty and failed when too long.
    ByteReader sub(uint64_t n) {
        if (failed_ || n > remaining()) {
            fail();
            return ByteReader(end_, end_);
        }
        ByteReader r(p_, p_ + n);
        p_ += n;
        return r;
    }
    uint64_t fail() {
        failed_ = true;
        p_ = end_;
        return 0;
    }

private:
    const unsigned char* p_;
    const unsigned char* end_;
    bool failed_ = false;
};

}  // namespace memscope::native
