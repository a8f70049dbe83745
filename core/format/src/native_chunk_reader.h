#pragma once
// Reads the chunks after the file header: checks each (bounds, checksum,
// sizes), applies table chunks in order, and decodes events chunks, either
// one after the other or in parallel. The first bad chunk ends the read.

#include <cstddef>
#include <cstdint>

#include "memscope/format/native_format.h"

namespace memscope::native {

enum class ReadOutcome { Done, Cancelled };

// Fills `trace` and `report` (chunks_read, bytes_lost, problem) from the chunks
// of data[kFileHeaderSize, size).
// With tolerate_partial_tail, a last chunk cut short is no problem: its
// bytes go to report.bytes_pending.
ReadOutcome readChunks(const unsigned char* data, size_t size, const TaskContext& ctx, Trace& trace,
                       NativeReadReport& report, bool tolerate_partial_tail = false);

}  // namespace memscope::native
