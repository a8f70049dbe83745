#include "memscope/recording/capture_log.h"

#include <algorithm>
#include <cstring>

#include "memscope/base/file_io.h"
#include "memscope/model/op_scopes.h"

namespace memscope {
namespace {

template <typename T>
T loadLittleEndian(const char* p) {
    T value;
    std::memcpy(&value, p, sizeof(T));  // x86-64 and aarch64 are little-endian
    return value;
}

// Typed records, decoded as the allocations are read. A name spans one
// record and the text records after it; one cut by another record is damage.
class TypedRecords {
public:
    explicit TypedRecords(CapturedOps& ops) : ops_(ops) {}

    void add(const char* r) {
        const auto kind = static_cast<CaptureRecordKind>(uint8_t(r[22]));
        if (kind == CaptureRecordKind::NameText) {
            if (text_left_ == 0) {
                ++ops_.bad;  // no name before it
                return;
            }
            const size_t n = std::min<size_t>(text_left_, 16);
            name_.append(r, n);
            text_left_ -= n;
            if (text_left_ == 0) finishName();
            return;
        }
        abandonName();
        if (kind == CaptureRecordKind::OpScope) {
            CapturedOp op;
            op.start = loadLittleEndian<int64_t>(r);
            op.end = loadLittleEndian<int64_t>(r + 8);
            op.name = loadLittleEndian<uint32_t>(r + 16);
            op.depth = std::min(loadLittleEndian<uint16_t>(r + 20), kMaxOpDepth);
            if (!ops_.names.contains(op.name) || op.end < op.start) {
                ++ops_.bad;
                return;
            }
            ops_.scopes.push_back(op);
        } else if (kind == CaptureRecordKind::OpName) {
            const uint16_t length = loadLittleEndian<uint16_t>(r + 20);
            if (length > kMaxCaptureOpName) {
                ++ops_.bad;
                return;
            }
            name_id_ = loadLittleEndian<uint32_t>(r + 16);
            const size_t n = std::min<size_t>(length, 16);
            name_.assign(r, n);
            text_left_ = length - n;
            naming_ = true;
            if (text_left_ == 0) finishName();
        }
        // Another kind: a newer writer's record, skipped.
    }

    // An allocation record: a name's text records come right after it.
    void plain() {
        if (naming_) abandonName();
    }
    void finish() { abandonName(); }

private:
    void finishName() {
        if (ops_.names.size() < kMaxCaptureOpNames)
            ops_.names.try_emplace(name_id_, std::move(name_));
        else
            ++ops_.bad;
        name_.clear();
        naming_ = false;
    }
    void abandonName() {
        if (naming_ && text_left_ > 0) ++ops_.bad;
        naming_ = false;
        text_left_ = 0;
        name_.clear();
    }

    CapturedOps& ops_;
    bool naming_ = false;
    uint32_t name_id_ = 0;
    size_t text_left_ = 0;
    std::string name_;
};

}  // namespace

Result<std::vector<CapturedAllocation>> readCaptureLog(const std::string& path,
                                                       const TaskContext& ctx) {
    auto log = readCaptureLogWithOps(path, ctx);
    if (!log) return log.error();
    return std::move(log->allocations);
}

// Read with plain reads, not a mapping: the log may still be growing or be cut
// by the process that writes it, and a read only ever returns fewer bytes.
Result<CaptureLog> readCaptureLogWithOps(const std::string& path, const TaskContext& ctx) {
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

    CaptureLog out;
    TypedRecords typed(out.ops);
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
            if (uint8_t(r[23]) == kCaptureTypedMarker) {
                typed.add(r);
                continue;
            }
            typed.plain();
            out.allocations.push_back({loadLittleEndian<int64_t>(r),
                                       loadLittleEndian<uint64_t>(r + 8),
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
    typed.finish();
    if (leftover != 0)
        ctx.warn({WarningKind::DamagedTail,
                  path + ": the last CPU allocation record was cut short (the process ended "
                         "while writing it); it was left out",
                  1});
    return out;
}

}  // namespace memscope
