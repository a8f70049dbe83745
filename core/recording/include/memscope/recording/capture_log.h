#pragma once
// The CPU allocation log that libmemscope_torch_capture.so writes inside a
// Python process (c10's memory-reporting hook) and `memscope-cli record`
// merges into the process's trace. A fixed 16-byte header, then fixed-size
// little-endian records appended as they happen, so that a process killed
// mid-write leaves a readable prefix.
//
//   header: "MSCPUEV1" | uint32 record size (24) | uint32 reserved (0)
//   record: int64 time (ns, CLOCK_REALTIME) | uint64 address | int64 bytes
//           (bytes > 0: an allocation, < 0: the free of -bytes)

#include <cstdint>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/base/task_context.h"

namespace memscope {

inline constexpr char kCaptureLogMagic[8] = {'M', 'S', 'C', 'P', 'U', 'E', 'V', '1'};
inline constexpr uint32_t kCaptureLogRecordSize = 24;
inline constexpr uint32_t kCaptureLogHeaderSize = 16;
// Past this many bytes of records (about 89 million allocations) the log is
// refused, not read: a sparse file or a runaway writer, not a recording.
inline constexpr uint64_t kMaxCaptureLogBytes = uint64_t(2) << 30;

struct CapturedAllocation {
    int64_t time = 0;
    uint64_t address = 0;
    int64_t bytes = 0;  // > 0 alloc, < 0 free
};

// Reads the whole log. A partial last record (the process died mid-write) is
// dropped with a DamagedTail warning; a wrong header is an error.
Result<std::vector<CapturedAllocation>> readCaptureLog(const std::string& path,
                                                       const TaskContext& ctx = {});

}  // namespace memscope
