#pragma once
// Maps a read-only file mapping's pages in on a thread of its own, a bounded
// distance ahead of the one thread that reads it in order. A 1 GB snapshot's
// import faults in 262,144 pages of its input; on a virtual machine that was
// a twentieth of the import, on the one core the unpickler keeps busy while
// the other waited. The pages are populated with madvise(MADV_POPULATE_READ),
// which maps them without touching their bytes; the lead keeps what is mapped
// ahead small (the reader drops what it has passed).
//
// Given the InputFile itself, it copies the file's whole 2 MiB pages into
// huge pages instead (InputFile::copyInHugePages), which the reader walks
// several times faster, and maps in only what is left; the reader's
// dropBefore() gives the copies it has passed back.
//
// Where the kernel lacks MADV_POPULATE_READ (before Linux 5.14), the file
// shrank, or no thread can start, nothing is mapped ahead and the reader
// faults its pages in itself, as before.

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <span>
#include <thread>

namespace memscope {

class InputFile;

class ReadAhead {
public:
    // Starts mapping `bytes` (page-aligned, as from InputFile) in, up to
    // `lead` bytes past the reader's position (0 until reached() says).
    ReadAhead(std::span<const std::byte> bytes, size_t lead);
    // The same over the whole of `file`, its 2 MiB pages copied into huge
    // pages as they are reached; `file` outlives this.
    ReadAhead(InputFile& file, size_t lead);
    ~ReadAhead();  // stops within one slice of work
    ReadAhead(const ReadAhead&) = delete;
    ReadAhead& operator=(const ReadAhead&) = delete;

    // The reader is at `offset`.
    void reached(size_t offset);

private:
    void start();
    void run();

    std::span<const std::byte> bytes_;
    InputFile* file_ = nullptr;  // copies its 2 MiB pages where given
    size_t lead_;
    std::mutex mutex_;
    std::condition_variable moved_;
    size_t reached_ = 0;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace memscope
