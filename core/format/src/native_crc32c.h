#pragma once
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
// native-format chunk. Uses the SSE4.2 instruction where the CPU has it.

#include <cstddef>
#include <cstdint>

namespace memscope::native {

// Continues a CRC: crc32c(b, crc32c(a)) == crc32c(a + b). Start with 0.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace memscope::native
