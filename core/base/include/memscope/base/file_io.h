#pragma once
// Reading and writing whole files safely against other processes and full
// disks: a read-only mapping that survives the file shrinking under it (the
// pages past the new end read as zeros and the reader is told), a refusal of
// pipes and devices that cannot be read twice, and writes that replace a file
// only once the new one is complete.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "memscope/base/result.h"

namespace memscope {

// An error for anything but a regular file (a FIFO, `<(zcat ...)`, a device):
// memscope reads a file twice (once to recognize it, once to load it), which a
// pipe cannot give. Names the path in the message.
Result<void> requireRegularFile(const std::string& path);

// A whole regular file, mapped read-only. If another process truncates the file
// while it is read, the lost pages read as zeros instead of raising SIGBUS, and
// shrank() says so afterwards: the caller turns its result into an error.
class InputFile {
public:
    static Result<std::unique_ptr<InputFile>> open(const std::string& path, bool populate = false);
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    std::span<const std::byte> bytes() const {
        return {static_cast<const std::byte*>(data_), size_};
    }
    // Tells the kernel that [0, offset) is not needed for now (it faults back
    // in from the page cache if it is).
    void dropBefore(size_t offset);
    // True if the file became shorter than it was when opened (checked now).
    bool shrank() const;
    // "the file shrank from N to M bytes while it was read ..." (for the error;
    // without the path, which the caller names once: "PATH: the file shrank ...").
    std::string shrankMessage() const;

    struct Guard;

private:
    InputFile() = default;
    std::string path_;
    void* data_ = nullptr;
    size_t size_ = 0;
    size_t mapped_ = 0;  // size_ rounded up to pages
    size_t dropped_ = 0;
    int fd_ = -1;
    int slot_ = -1;  // SIGBUS guard slot
};

// Writes `path` through a temporary file in the same folder: `write` is given
// the temporary's path; on success the file is synced and renamed over `path`
// (an existing file keeps its permissions), on failure the temporary is removed
// and an existing `path` is left as it was.
Result<void> writeFileReplacing(const std::string& path,
                                const std::function<Result<void>(const std::string&)>& write);

}  // namespace memscope
