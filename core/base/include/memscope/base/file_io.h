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
#include <mutex>
#include <span>
#include <string>
#include <string_view>

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
    // in from the page cache if it is). Copies made by copyInHugePages below
    // the offset are given back, and the file mapped there again.
    void dropBefore(size_t offset);

    // Replaces the mapping of [offset, offset + length), whole 2 MiB pages of
    // the file from a 2 MiB-aligned offset, with a copy of the file's bytes
    // in anonymous memory that the kernel backs with 2 MiB pages: a reader
    // that walks a page-cache mapping restarts the hardware's prefetcher and
    // misses the TLB at every 4 KiB page, and a 1 GB file walked so read at
    // 2 GB/s on the development VM, 20 GB/s in 2 MiB pages. The copy goes in
    // at once (mremap over the mapping): a reader on another thread reads
    // the same bytes before, during and after. False, with nothing changed,
    // where it cannot be done (a range not of whole 2 MiB pages, no memory,
    // the file cut short, transparent huge pages turned off) or would be
    // useless (below what was dropped). Called by one thread at a time.
    bool copyInHugePages(size_t offset, size_t length);
    static constexpr size_t kHugePage = size_t(2) << 20;
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
    // [copied_from_, copied_to_): the copies in anonymous memory. The reader
    // drops below while the read-ahead copies above: guarded by a lock.
    size_t copied_from_ = 0;
    size_t copied_to_ = 0;
    std::mutex remapping_;
    int fd_ = -1;
    int slot_ = -1;  // SIGBUS guard slot
};

// A file opened for reading the one guarded way: opened O_NONBLOCK (a FIFO
// does not wait for a writer), checked with fstat to be a regular file (not
// a FIFO, a device, a folder; a path swapped for one after a folder was
// listed is refused here, at the open), then switched back to blocking reads.
// `what` names the kind of file in errors ("the hook log"); every error names
// the path.
class ReadableFile {
public:
    static Result<ReadableFile> open(const std::string& path, const std::string& what = "file");
    ReadableFile(ReadableFile&& other) noexcept;
    ReadableFile& operator=(ReadableFile&& other) noexcept;
    ReadableFile(const ReadableFile&) = delete;
    ReadableFile& operator=(const ReadableFile&) = delete;
    ~ReadableFile();

    // Up to `n` bytes (fewer only at the end of the file); 0 at the end.
    Result<size_t> read(void* buffer, size_t n);
    uint64_t size() const { return size_; }  // when opened
    const std::string& path() const { return path_; }
    // The descriptor, given up to the caller (e.g. for fdopen).
    int release();

private:
    ReadableFile() = default;
    int fd_ = -1;
    uint64_t size_ = 0;
    std::string path_;
    std::string what_;
};

// A whole regular file, read in pieces through ReadableFile; refused, without
// reading it, when it holds more than `max_bytes` (and when it grows past
// them while read).
Result<std::string> readWholeFile(const std::string& path, uint64_t max_bytes,
                                  const std::string& what = "file");

// The lines of a regular file, read in pieces (never whole): `line` is given
// each line without its '\n'; `cut` is true for a last line without one. A
// line longer than `max_line` is not kept: `line` gets it as `too_long`
// (with its first bytes only), and the reading goes on after it. Refused
// when the file holds more than `max_bytes`.
struct FileLine {
    std::string_view text;
    uint64_t number = 0;  // from 1
    bool cut = false;
    bool too_long = false;
};
Result<void> forEachLine(const std::string& path, size_t max_line, uint64_t max_bytes,
                         const std::string& what,
                         const std::function<Result<void>(const FileLine&)>& line);

// Folders and files written under an output folder that others may share
// (/tmp, a team's scratch space): a folder is used only when it is a real
// folder (not a symlink to one) owned by this user, and files in it are
// created exclusively, never through a symlink.
//
// `path` as a folder this user owns: made (mode 0700) when missing; an error
// naming it when it is a symlink, not a folder, or someone else's.
Result<void> makeOwnFolder(const std::string& path);
// The same check without making it (lstat: a symlink is refused, not followed).
Result<void> checkOwnFolder(const std::string& path);
// A new file for writing: O_CREAT | O_EXCL | O_NOFOLLOW, so that a file or a
// symlink already there is an error, never written through. The descriptor.
Result<int> createExclusive(const std::string& path, int mode = 0644);

// Writes `path` through a temporary file in the same folder: `write` is given
// the temporary's path; on success the file is synced and renamed over `path`
// (an existing file keeps its permissions), on failure the temporary is removed
// and an existing `path` is left as it was.
Result<void> writeFileReplacing(const std::string& path,
                                const std::function<Result<void>(const std::string&)>& write);

}  // namespace memscope
