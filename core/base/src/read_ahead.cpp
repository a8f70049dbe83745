#include "memscope/base/read_ahead.h"

#include <algorithm>
#include <cstdint>
#include <system_error>

#include "memscope/base/file_io.h"

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace memscope {
namespace {

#if defined(__linux__) && !defined(MADV_POPULATE_READ)
constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14; older headers lack it
#endif

// Small enough that the lead is kept closely and stopping is quick, large
// enough that the system calls cost nothing beside the faults.
constexpr size_t kSlice = size_t(4) << 20;

// False when the kernel cannot populate, or a page is gone (the file shrank):
// then nothing more is tried.
bool populate(const std::byte* at, size_t n) {
#ifdef __linux__
    return madvise(const_cast<std::byte*>(at), n, MADV_POPULATE_READ) == 0;
#else
    (void)at;
    (void)n;
    return false;
#endif
}

}  // namespace

ReadAhead::ReadAhead(std::span<const std::byte> bytes, size_t lead) : bytes_(bytes), lead_(lead) {
    start();
}

ReadAhead::ReadAhead(InputFile& file, size_t lead)
    : bytes_(file.bytes()), file_(&file), lead_(lead) {
    start();
}

void ReadAhead::start() {
    // madvise wants a page-aligned start: a mapping's is.
    if (bytes_.empty() || reinterpret_cast<uintptr_t>(bytes_.data()) % 4096 != 0) return;
    try {
        thread_ = std::thread([this] { run(); });
    } catch (const std::system_error&) {
        // No thread: the reader faults its pages in itself.
    }
}

ReadAhead::~ReadAhead() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    moved_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void ReadAhead::reached(size_t offset) {
    {
        std::lock_guard lock(mutex_);
        if (offset <= reached_) return;
        reached_ = offset;
    }
    moved_.notify_all();
}

void ReadAhead::run() {
    // Copies while they succeed; from the first that does not (no memory,
    // the file cut short), pages are mapped in as they are.
    bool copying = file_ != nullptr;
    for (size_t at = 0; at < bytes_.size(); at += kSlice) {
        {
            std::unique_lock lock(mutex_);
            moved_.wait(lock, [&] { return stop_ || at < reached_ + lead_; });
            if (stop_) return;
        }
        const size_t n = std::min(kSlice, bytes_.size() - at);
        const size_t whole = n / InputFile::kHugePage * InputFile::kHugePage;
        size_t copied = 0;
        if (copying && whole > 0) {
            copying = file_->copyInHugePages(at, whole);
            if (copying) copied = whole;
        }
        if (copied < n && !populate(bytes_.data() + at + copied, n - copied)) return;
    }
}

}  // namespace memscope
