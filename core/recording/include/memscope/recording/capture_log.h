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
//
// Typed records (the ops that made the allocations) share the 24 bytes: the
// last byte is 0x80, so that `bytes` would be a free of more than 2^62 bytes,
// which no allocator makes; byte 22 is the kind:
//   op scope (1): int64 start | int64 end | uint32 name id | uint16 depth
//   op name (2):  16 bytes of the name (zero padded) | uint32 id | uint16 length
//   name text (3): the next 16 bytes of the name before it (as many records
//                  as its length needs, right after it)
// A name comes before the first scope that uses it. Logs of readers without
// ops hold none, and read as before; a reader without ops would see the
// typed records as frees of addresses never allocated.

#include <cstdint>
#include <string>
#include <unordered_map>
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

inline constexpr uint8_t kCaptureTypedMarker = 0x80;  // byte 23 of a typed record
enum class CaptureRecordKind : uint8_t { OpScope = 1, OpName = 2, NameText = 3 };
// Names longer are cut by the writer; a longer length is damage.
inline constexpr uint16_t kMaxCaptureOpName = 1024;
// Distinct op names a reader keeps (PyTorch has a few thousand ops); more are
// damage.
inline constexpr size_t kMaxCaptureOpNames = size_t(1) << 20;

struct CapturedAllocation {
    int64_t time = 0;
    uint64_t address = 0;
    int64_t bytes = 0;  // > 0 alloc, < 0 free
};

// An op in whose span an allocation was made (the capture library logs no
// other; the hook's dispatch mode logs every op the same way, hook_log.h):
// on the allocations' clock (CLOCK_REALTIME ns).
struct CapturedOp {
    int64_t start = 0;
    int64_t end = 0;
    uint32_t name = 0;   // a CapturedOps::names key
    uint16_t depth = 0;  // in its thread's stack of ops; clamped to kMaxOpDepth
};

struct CapturedOps {
    std::unordered_map<uint32_t, std::string> names;  // the first record of an id wins
    std::vector<CapturedOp> scopes;                   // in the producer's order
    size_t bad = 0;  // records that make no op (unknown name, a name cut short): left out
    bool empty() const { return scopes.empty(); }
};

struct CaptureLog {
    std::vector<CapturedAllocation> allocations;
    CapturedOps ops;
};

// Reads the whole log. A partial last record (the process died mid-write) is
// dropped with a DamagedTail warning; a wrong header is an error. Typed
// records of a kind this reader does not know (a newer writer's) are skipped.
Result<CaptureLog> readCaptureLogWithOps(const std::string& path, const TaskContext& ctx = {});
// The allocations only.
Result<std::vector<CapturedAllocation>> readCaptureLog(const std::string& path,
                                                       const TaskContext& ctx = {});

}  // namespace memscope
