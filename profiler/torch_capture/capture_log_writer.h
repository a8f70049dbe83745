#pragma once
// Appends CPU allocation records to the log that core's readCaptureLog reads
// (memscope/capture_log.h). Called from c10's allocator on any thread, so it
// only takes a mutex and copies 24 bytes; a full buffer is written out with
// one write(2).

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace memscope::torch_capture {

class CaptureLogWriter {
public:
    // False (with errno set) when the file cannot be created.
    bool open(const std::string& path);
    void append(int64_t time, uint64_t address, int64_t bytes);
    // False when the log is not open or a write failed; after a failed write
    // the file is cut back to whole records and capturing stops.
    bool flush();
    bool isOpen() const;

private:
    bool flushLocked();

    mutable std::mutex mutex_;
    int fd_ = -1;
    size_t committed_ = 0;  // bytes of whole records (and the header) on disk
    std::vector<char> buffer_;
};

}  // namespace memscope::torch_capture
