#include "capture_log_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "memscope/recording/capture_log.h"

namespace memscope::torch_capture {
namespace {
constexpr size_t kBufferBytes = 64 * 1024;  // ~2,700 records per write(2)

bool writeAll(int fd, const char* data, size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += n;
        size -= size_t(n);
    }
    return true;
}
}  // namespace

bool CaptureLogWriter::open(const std::string& path) {
    std::lock_guard lock(mutex_);
    return openLocked(path);
}

bool CaptureLogWriter::openLocked(const std::string& path) {
    if (fd_ >= 0) return true;
    // Created, never opened: a file or a symlink already at `path` (planted
    // in the output folder) is refused rather than written through. The hook
    // removes its own leftover first (capture.py).
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    char header[kCaptureLogHeaderSize] = {};
    std::memcpy(header, kCaptureLogMagic, sizeof(kCaptureLogMagic));
    const uint32_t record_size = kCaptureLogRecordSize;
    std::memcpy(header + 8, &record_size, sizeof(record_size));
    if (!writeAll(fd, header, sizeof(header))) {
        ::close(fd);
        return false;
    }
    fd_ = fd;
    committed_ = sizeof(header);
    op_names_.clear();  // each log names its ops again
    buffer_.reserve(kBufferBytes);
    return true;
}

bool CaptureLogWriter::isOpen() const {
    std::lock_guard lock(mutex_);
    return fd_ >= 0;
}

void CaptureLogWriter::append(int64_t time, uint64_t address, int64_t bytes) {
    std::lock_guard lock(mutex_);
    if (tracking_) {
        if (bytes > 0) {
            auto [it, inserted] = live_.try_emplace(address, bytes);
            if (!inserted) live_bytes_ -= it->second;
            it->second = bytes;
            live_bytes_ += bytes;
        } else if (auto it = live_.find(address); it != live_.end()) {
            live_bytes_ -= it->second;
            live_.erase(it);
        }
    }
    if (fd_ < 0) return;
    appendLocked(time, address, bytes);
}

void CaptureLogWriter::appendLocked(int64_t time, uint64_t address, int64_t bytes) {
    char record[kCaptureLogRecordSize];
    std::memcpy(record, &time, 8);
    std::memcpy(record + 8, &address, 8);
    std::memcpy(record + 16, &bytes, 8);
    appendRaw(record);
}

void CaptureLogWriter::appendRaw(const char (&record)[24]) {
    buffer_.insert(buffer_.end(), record, record + sizeof(record));
    if (buffer_.size() >= kBufferBytes) (void)flushLocked();
}

namespace {
void markTyped(char* record, CaptureRecordKind kind) {
    record[22] = char(kind);
    record[23] = char(kCaptureTypedMarker);
}
}  // namespace

uint32_t CaptureLogWriter::opNameLocked(std::string_view name) {
    name = name.substr(0, kMaxCaptureOpName);
    if (auto it = op_names_.find(name); it != op_names_.end()) return it->second;
    const auto id = uint32_t(op_names_.size() + 1);
    op_names_.emplace(std::string(name), id);
    char record[kCaptureLogRecordSize] = {};
    const auto length = uint16_t(name.size());
    std::memcpy(record, name.data(), std::min<size_t>(name.size(), 16));
    std::memcpy(record + 16, &id, 4);
    std::memcpy(record + 20, &length, 2);
    markTyped(record, CaptureRecordKind::OpName);
    appendRaw(record);
    for (size_t at = 16; at < name.size(); at += 16) {
        char text[kCaptureLogRecordSize] = {};
        std::memcpy(text, name.data() + at, std::min<size_t>(name.size() - at, 16));
        markTyped(text, CaptureRecordKind::NameText);
        appendRaw(text);
    }
    return id;
}

void CaptureLogWriter::appendOp(int64_t start, int64_t end, std::string_view name, uint16_t depth) {
    std::lock_guard lock(mutex_);
    if (fd_ < 0) return;
    const uint32_t id = opNameLocked(name);
    char record[kCaptureLogRecordSize] = {};
    std::memcpy(record, &start, 8);
    std::memcpy(record + 8, &end, 8);
    std::memcpy(record + 16, &id, 4);
    std::memcpy(record + 20, &depth, 2);
    markTyped(record, CaptureRecordKind::OpScope);
    appendRaw(record);
}

void CaptureLogWriter::setTracking(bool on) {
    std::lock_guard lock(mutex_);
    tracking_ = on;
    if (!on) {
        live_.clear();
        live_bytes_ = 0;
    }
}

bool CaptureLogWriter::openWithLive(const std::string& path, int64_t time) {
    std::lock_guard lock(mutex_);
    if (fd_ >= 0) return false;  // a window is open already
    if (!openLocked(path)) return false;
    for (const auto& [address, bytes] : live_) appendLocked(time, address, bytes);
    return true;
}

bool CaptureLogWriter::close() {
    std::lock_guard lock(mutex_);
    if (fd_ < 0) return true;
    const bool ok = flushLocked();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return ok;
}

int64_t CaptureLogWriter::liveBytes() const {
    std::lock_guard lock(mutex_);
    return live_bytes_;
}

int64_t CaptureLogWriter::liveCount() const {
    std::lock_guard lock(mutex_);
    return int64_t(live_.size());
}

bool CaptureLogWriter::flush() {
    std::lock_guard lock(mutex_);
    return flushLocked();
}

bool CaptureLogWriter::flushLocked() {
    if (fd_ < 0) return false;
    const bool ok = writeAll(fd_, buffer_.data(), buffer_.size());
    if (ok) {
        committed_ += buffer_.size();
    } else {
        // A full disk: a record cut short would misalign every record written
        // after it. Cut the file back to its last whole record and stop; the
        // log stays a readable prefix, and flush() reports the failure.
        (void)::ftruncate(fd_, off_t(committed_));
        ::close(fd_);
        fd_ = -1;
    }
    buffer_.clear();
    return ok;
}

}  // namespace memscope::torch_capture
