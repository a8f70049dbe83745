#include "memscope/recording/capture_log.h"

#include <cstring>

#include "memscope/base/file_io.h"

namespace memscope {
namespace {

template <typename T>
T loadLittleEndian(const char* p) {
    T value;
    std::memcpy(&value, p, sizeof(T));  // x86-64 and aarch64 are little-endian
    return value;
}

}  // namespace

// Read with plain reads, not a mapping: the log may still be growing or be cut
// by the process that writes it, and a read only ever returns fewer bytes.
Result<std::vector<CapturedAllocation>> readCaptureLog(const std::string& path,
                                                       const TaskContext& ctx) {
    auto in = ReadableFile::open(path, "the CPU allocation log");
    if (!in) return in.error();
    if (in->size() > kMaxCaptureLogBytes + kCaptureLogHeaderSize)
        return makeError(path + ": the CPU allocation log is larger than " +
                         std::to_string(kMaxCaptureLogBytes >> 30) +
                         " GiB; not one memscope wrote");
    char header[kCaptureLogHeaderSize];
    auto head = in->read(header, sizeof(header));
    if (!head) return head.error();
    if (*head != sizeof(header) ||
        std::memcmp(header, kCaptureLogMagic, sizeof(kCaptureLogMagic)) != 0)
        return makeError(path + ": not a memscope CPU allocation log (bad header)");
    if (loadLittleEndian<uint32_t>(header + 8) != kCaptureLogRecordSize)
        return makeError(path + ": CPU allocation log with an unknown record size");

    std::vector<CapturedAllocation> out;
    constexpr size_t kRecordsPerRead = 1 << 16;
    std::vector<char> buffer(kRecordsPerRead * kCaptureLogRecordSize);
    size_t leftover = 0;  // bytes of a record cut by the previous read
    uint64_t done = 0;
    for (;;) {
        if (ctx.cancelled()) return cancelledError();
        const size_t asked = buffer.size() - leftover;
        auto got = in->read(buffer.data() + leftover, asked);
        if (!got) return got.error();
        const size_t have = leftover + *got;
        const size_t whole = have / kCaptureLogRecordSize;
        for (size_t i = 0; i < whole; ++i) {
            const char* r = buffer.data() + i * kCaptureLogRecordSize;
            out.push_back({loadLittleEndian<int64_t>(r), loadLittleEndian<uint64_t>(r + 8),
                           loadLittleEndian<int64_t>(r + 16)});
        }
        leftover = have - whole * kCaptureLogRecordSize;
        std::memmove(buffer.data(), buffer.data() + whole * kCaptureLogRecordSize, leftover);
        done += whole * kCaptureLogRecordSize;
        ctx.report(done, 0);
        if (done > kMaxCaptureLogBytes)
            return makeError(path + ": the CPU allocation log holds more than " +
                             std::to_string(kMaxCaptureLogBytes >> 30) +
                             " GiB of records; not one memscope wrote");
        if (*got < asked) break;  // end of file
    }
    if (leftover != 0)
        ctx.warn({WarningKind::DamagedTail,
                  path + ": the last CPU allocation record was cut short (the process ended "
                         "while writing it); it was left out",
                  1});
    return out;
}

}  // namespace memscope
