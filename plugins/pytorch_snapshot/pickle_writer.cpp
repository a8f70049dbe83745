#include "pickle_writer.h"

#include <cstring>

#include "pickle_opcodes.h"

namespace memscope::pickle {

Writer::Writer(std::FILE* out) : out_(out) {
    buf_.reserve(kFrameTarget + 4096);
}

void Writer::le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(char((v >> (8 * i)) & 0xff));
}

void Writer::flushFrame() {
    if (buf_.empty()) return;
    char head[9];
    head[0] = char(FRAME);
    const uint64_t n = buf_.size();
    for (int i = 0; i < 8; ++i) head[1 + i] = char((n >> (8 * i)) & 0xff);
    if (std::fwrite(head, 1, sizeof head, out_) != sizeof head ||
        std::fwrite(buf_.data(), 1, buf_.size(), out_) != buf_.size())
        io_error_ = true;
    buf_.clear();
}

void Writer::begin() {
    const char proto[2] = {char(PROTO), 4};
    if (std::fwrite(proto, 1, 2, out_) != 2) io_error_ = true;
}

void Writer::end() {
    op(STOP);
    flushFrame();
    if (std::fflush(out_) != 0) io_error_ = true;
}

Result<void> Writer::status() const {
    if (io_error_) return makeError(std::string("write failed: ") + std::strerror(errno));
    return {};
}

void Writer::none() {
    op(NONE);
}
void Writer::boolean(bool v) {
    op(v ? NEWTRUE : NEWFALSE);
}

void Writer::integer(int64_t v) {
    if (v >= 0 && v < 256) {
        op(BININT1);
        buf_.push_back(char(v));
    } else if (v >= 0 && v < 65536) {
        op(BININT2);
        le(uint64_t(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        op(BININT);
        le(uint64_t(v), 4);
    } else {
        // LONG1: minimal little-endian two's complement, as CPython's encode_long.
        uint8_t b[8];
        for (int i = 0; i < 8; ++i) b[i] = uint8_t(uint64_t(v) >> (8 * i));
        int n = 8;
        while (n > 1 && ((b[n - 1] == 0x00 && !(b[n - 2] & 0x80)) ||
                         (b[n - 1] == 0xff && (b[n - 2] & 0x80))))
            --n;
        op(LONG1);
        buf_.push_back(char(n));
        buf_.append(reinterpret_cast<const char*>(b), size_t(n));
    }
}

void Writer::unsignedInteger(uint64_t v) {
    if (v <= uint64_t(INT64_MAX)) return integer(int64_t(v));
    op(LONG1);  // >= 2^63 needs a ninth byte for the sign
    buf_.push_back(char(9));
    le(v, 8);
    buf_.push_back(char(0));
}

void Writer::floating(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    op(BINFLOAT);
    for (int i = 7; i >= 0; --i) buf_.push_back(char((bits >> (8 * i)) & 0xff));
}

void Writer::string(std::string_view s) {
    if (s.size() < 256) {
        op(SHORT_BINUNICODE);
        buf_.push_back(char(s.size()));
    } else {
        op(BINUNICODE);  // memory_viz reads no BINUNICODE8: strings stay below 4 GiB
        le(s.size() > UINT32_MAX ? UINT32_MAX : s.size(), 4);
        if (s.size() > UINT32_MAX) s = s.substr(0, UINT32_MAX);
    }
    buf_.append(s.data(), s.size());
}

void Writer::emptyDict() {
    op(EMPTY_DICT);
}
void Writer::emptyList() {
    op(EMPTY_LIST);
}
void Writer::mark() {
    op(MARK);
}
void Writer::setItems() {
    op(SETITEMS);
}
void Writer::appends() {
    op(APPENDS);
}
void Writer::tuple2() {
    op(TUPLE2);
}

uint32_t Writer::memoize() {
    op(MEMOIZE);
    return next_memo_++;
}

void Writer::get(uint32_t id) {
    if (id < 256) {
        op(BINGET);
        buf_.push_back(char(id));
    } else {
        op(LONG_BINGET);
        le(id, 4);
    }
}

}  // namespace memscope::pickle
