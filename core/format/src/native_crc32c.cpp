// CRC32C: a table-driven portable version (slicing by 8) and, on x86-64, the
// crc32 instruction, picked once at first use. Both give the same values;
// the tests check them against a bitwise reference.
#include "native_crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace memscope::native {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables makeTables() {
    Tables t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
        t[0][i] = c;
    }
    for (size_t i = 0; i < 256; ++i)
        for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    return t;
}
constexpr Tables kTables = makeTables();

uint32_t crcPortable(const unsigned char* p, size_t n, uint32_t crc) {
    while (n >= 8) {
        uint64_t word;
        std::memcpy(&word, p, 8);
        if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) word = __builtin_bswap64(word);
        const uint32_t lo = static_cast<uint32_t>(word) ^ crc;
        const uint32_t hi = static_cast<uint32_t>(word >> 32);
        crc = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
              kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
              kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
// One crc32 instruction per 8 bytes, but each waits for the one before (3
// cycles): three independent streams over neighbouring blocks keep the unit
// busy, and the CRC's linearity joins them: over A then B, the register is
// shift(crc(A), |B|) xor crc(B) from a zero register, where shift appends
// |B| zero bytes.
constexpr size_t kStreamBytes = 4096;

// Appends kStreamBytes zero bytes to a register: a linear map, so four
// tables of its values on each byte of the register.
struct ZeroShift {
    std::array<std::array<uint32_t, 256>, 4> table{};
    uint32_t operator()(uint32_t c) const {
        return table[0][c & 0xff] ^ table[1][(c >> 8) & 0xff] ^ table[2][(c >> 16) & 0xff] ^
               table[3][c >> 24];
    }
};

__attribute__((target("sse4.2"))) uint32_t crcOneStream(const unsigned char* p, size_t n,
                                                        uint32_t crc) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t word;
        std::memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = static_cast<uint32_t>(c);
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

const ZeroShift& zeroShift() {
    static const ZeroShift shift = [] {
        ZeroShift z;
        static const unsigned char zeros[kStreamBytes] = {};
        uint32_t basis[32];
        for (int bit = 0; bit < 32; ++bit)
            basis[bit] = crcOneStream(zeros, kStreamBytes, uint32_t{1} << bit);
        for (int k = 0; k < 4; ++k)
            for (uint32_t b = 0; b < 256; ++b) {
                uint32_t v = 0;
                for (int bit = 0; bit < 8; ++bit)
                    if (b >> bit & 1) v ^= basis[8 * k + bit];
                z.table[k][b] = v;
            }
        return z;
    }();
    return shift;
}

__attribute__((target("sse4.2"))) uint32_t crcHardware(const unsigned char* p, size_t n,
                                                       uint32_t crc) {
    if (n >= 3 * kStreamBytes) {
        const ZeroShift& shift = zeroShift();
        while (n >= 3 * kStreamBytes) {
            uint64_t c0 = crc, c1 = 0, c2 = 0;
            for (size_t i = 0; i < kStreamBytes; i += 8) {
                uint64_t w0, w1, w2;
                std::memcpy(&w0, p + i, 8);
                std::memcpy(&w1, p + kStreamBytes + i, 8);
                std::memcpy(&w2, p + 2 * kStreamBytes + i, 8);
                c0 = _mm_crc32_u64(c0, w0);
                c1 = _mm_crc32_u64(c1, w1);
                c2 = _mm_crc32_u64(c2, w2);
            }
            crc = shift(shift(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1)) ^
                  static_cast<uint32_t>(c2);
            p += 3 * kStreamBytes;
            n -= 3 * kStreamBytes;
        }
    }
    return crcOneStream(p, n, crc);
}
#endif

using CrcFn = uint32_t (*)(const unsigned char*, size_t, uint32_t);

CrcFn pickImplementation() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return crcHardware;
#endif
    return crcPortable;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
    static const CrcFn fn = pickImplementation();
    // The register form is inverted on entry and exit so that crc32c("") == 0
    // and calls chain.
    return ~fn(static_cast<const unsigned char*>(data), size, ~crc);
}

}  // namespace memscope::native
