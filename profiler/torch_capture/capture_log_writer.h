#pragma once
// Appends CPU allocation records, and the ops that made allocations, to the
// log that core's readCaptureLog reads (memscope/capture_log.h). Called from c10's allocator on any
// thread, so it only takes a mutex and copies 24 bytes; a full buffer is written out with one
// write(2).

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
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
    // An op in whose span an allocation was made (capture_log.h's typed
    // records): its name is written once per log, before its first scope.
    void appendOp(int64_t start, int64_t end, std::string_view name, uint16_t depth);

    // Idle mode (`record --idle`, attach): the allocations alive are kept by
    // address whether or not a log is open, so that a log opened later
    // (openWithLive) starts with them, as allocations at `time`, and `top`
    // can read their total.
    void setTracking(bool on);
    bool openWithLive(const std::string& path, int64_t time);
    // Flushes and closes the log; tracking goes on. False if the flush failed.
    bool close();
    int64_t liveBytes() const;
    int64_t liveCount() const;

private:
    bool openLocked(const std::string& path);
    bool flushLocked();
    void appendLocked(int64_t time, uint64_t address, int64_t bytes);
    void appendRaw(const char (&record)[24]);
    uint32_t opNameLocked(std::string_view name);

    mutable std::mutex mutex_;
    int fd_ = -1;
    size_t committed_ = 0;  // bytes of whole records (and the header) on disk
    std::vector<char> buffer_;
    bool tracking_ = false;
    std::unordered_map<uint64_t, int64_t> live_;  // address -> bytes (tracking_)
    int64_t live_bytes_ = 0;
    // Looked up by string_view: no std::string made per logged op.
    struct NameHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>>
        op_names_;  // of the open log
};

}  // namespace memscope::torch_capture
