#include "memscope/base/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "memscope/base/transparent_huge_pages.h"

namespace memscope {
namespace {

// Mappings guarded against SIGBUS: a fault inside one is a page past the end
// of a file that shrank; the handler maps zeros over the rest of that mapping
// and notes it, and the read goes on.
struct GuardSlot {
    std::atomic<uintptr_t> begin{0};
    std::atomic<uintptr_t> end{0};
    std::atomic<bool> faulted{false};
    std::atomic<bool> used{false};
};
constexpr int kGuardSlots = 64;
GuardSlot g_slots[kGuardSlots];
struct sigaction g_previous {};
uintptr_t g_page = 4096;

void onSigbus(int sig, siginfo_t* info, void* context) {
    const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (GuardSlot& s : g_slots) {
        const uintptr_t b = s.begin.load(std::memory_order_acquire);
        const uintptr_t e = s.end.load(std::memory_order_acquire);
        if (b == 0 || addr < b || addr >= e) continue;
        const uintptr_t page = addr & ~(g_page - 1);
        void* zeros = ::mmap(reinterpret_cast<void*>(page), e - page, PROT_READ,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (zeros != MAP_FAILED) {
            s.faulted.store(true, std::memory_order_release);
            return;
        }
    }
    // Not ours: whoever was there before decides (by default, the process dies).
    if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction) {
        g_previous.sa_sigaction(sig, info, context);
        return;
    }
    if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
        g_previous.sa_handler) {
        g_previous.sa_handler(sig);
        return;
    }
    ::signal(SIGBUS, SIG_DFL);  // the faulting access runs again and ends the process
}

void installGuard() {
    static std::once_flag once;
    std::call_once(once, [] {
        g_page = uintptr_t(::sysconf(_SC_PAGESIZE));
        struct sigaction sa {};
        sa.sa_sigaction = &onSigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGBUS, &sa, &g_previous);
    });
}

int claimSlot(void* data, size_t mapped) {
    for (int i = 0; i < kGuardSlots; ++i) {
        bool expected = false;
        if (!g_slots[i].used.compare_exchange_strong(expected, true)) continue;
        g_slots[i].faulted.store(false);
        g_slots[i].end.store(reinterpret_cast<uintptr_t>(data) + mapped, std::memory_order_release);
        g_slots[i].begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
        return i;
    }
    return -1;
}

char* alignUp(void* p, size_t to) {
    return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + to - 1) & ~uintptr_t(to - 1));
}

// An anonymous read-write mapping of `length` bytes at a `to`-aligned
// address (the excess unmapped), or null.
char* mapAlignedAnonymous(size_t length, size_t to, int prot, int flags) {
    void* raw = ::mmap(nullptr, length + to, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    char* aligned = alignUp(raw, to);
    char* const end = static_cast<char*>(raw) + length + to;
    if (aligned != raw) ::munmap(raw, size_t(aligned - static_cast<char*>(raw)));
    if (aligned + length != end) ::munmap(aligned + length, size_t(end - (aligned + length)));
    return aligned;
}

// The file read-only at a 2 MiB-aligned address when it holds a 2 MiB page
// or more, so that its whole 2 MiB pages can be replaced by copies in huge
// pages (copyInHugePages); else wherever the kernel puts it.
void* mapFile(int fd, size_t size, size_t mapped) {
    if (size >= InputFile::kHugePage) {
        if (char* at =
                mapAlignedAnonymous(mapped, InputFile::kHugePage, PROT_NONE, MAP_NORESERVE)) {
            void* data = ::mmap(at, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
            if (data != MAP_FAILED) return data;
            ::munmap(at, mapped);
        }
    }
    return ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
}

// The file mapped again over [offset, offset + length) of a mapping at
// `data`, where a copy was: its memory goes back to the system. Mapped
// elsewhere first and moved over the copy, so that the copy stays where
// that cannot be done.
bool mapFileOver(char* data, int fd, size_t offset, size_t length) {
    void* fresh = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, off_t(offset));
    if (fresh == MAP_FAILED) return false;
    if (::mremap(fresh, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, data + offset) ==
        MAP_FAILED) {
        ::munmap(fresh, length);
        return false;
    }
    return true;
}

std::string errnoText(int err) {
    return std::strerror(err);
}

std::string kindOf(mode_t mode) {
    if (S_ISFIFO(mode)) return "a pipe (FIFO)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISDIR(mode)) return "a folder";
    return "not a regular file";
}

std::string notRegular(const std::string& path, mode_t mode) {
    return path + " is " + kindOf(mode) +
           ": memscope reads a trace twice (to recognize it, then to load it), which a pipe "
           "cannot give; save it to a file first (e.g. zcat trace.json.gz > trace.json)";
}

// The one guarded open of a file memscope reads: O_NONBLOCK so that opening a
// FIFO does not wait for a writer before it can be refused; fstat on what was
// opened (not on the path, which may have changed since it was listed); then
// blocking reads again.
// `what`: the kind of file, for the errors ("" for a trace).
Result<int> openRegular(const std::string& path, struct stat& st, const std::string& what = {}) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (what.empty()) return makeError("cannot open " + path + ": " + errnoText(errno));
        return makeError(path + ": cannot open " + what + " (" + errnoText(errno) + ")");
    }
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return makeError("cannot read " + path + ": " + errnoText(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        if (what.empty()) return makeError(notRegular(path, st.st_mode));
        return makeError(path + ": " + what + " is " + kindOf(st.st_mode) +
                         ", not a regular file; refused");
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        const int err = errno;
        ::close(fd);
        return makeError("cannot read " + path + ": " + errnoText(err));
    }
    return fd;
}

}  // namespace

Result<void> requireRegularFile(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return makeError("cannot open " + path + ": " + errnoText(errno));
    if (!S_ISREG(st.st_mode)) return makeError(notRegular(path, st.st_mode));
    return {};
}

Result<std::unique_ptr<InputFile>> InputFile::open(const std::string& path, bool populate) {
    struct stat st {};
    auto opened = openRegular(path, st);
    if (!opened) return opened.error();
    const int fd = *opened;
    std::unique_ptr<InputFile> f(new InputFile());
    f->path_ = path;
    f->fd_ = fd;
    f->size_ = size_t(st.st_size);
    if (f->size_ == 0) return f;
    installGuard();
    f->mapped_ = (f->size_ + g_page - 1) & ~(g_page - 1);
    // Guard first, populate after: MAP_POPULATE on a file that is being cut
    // could fault before the slot exists, so the populate is a separate madvise.
    void* data = mapFile(fd, f->size_, f->mapped_);
    if (data == MAP_FAILED) return makeError("cannot map " + path + ": " + errnoText(errno));
    f->data_ = data;
    f->slot_ = claimSlot(data, f->mapped_);
    if (f->slot_ < 0) return makeError("cannot read " + path + ": too many files open at once");
    ::madvise(data, f->size_, populate ? MADV_WILLNEED : MADV_SEQUENTIAL);
    return f;
}

InputFile::~InputFile() {
    if (slot_ >= 0) {
        GuardSlot& s = g_slots[slot_];
        s.begin.store(0, std::memory_order_release);
        s.end.store(0, std::memory_order_release);
        s.used.store(false, std::memory_order_release);
    }
    if (data_) ::munmap(data_, size_);
    if (fd_ >= 0) ::close(fd_);
}

void InputFile::dropBefore(size_t offset) {
    offset = offset / g_page * g_page;
    if (!data_ || offset <= dropped_ || offset > size_) return;
    char* const data = static_cast<char*>(data_);
    const std::lock_guard lock(remapping_);
    const auto forget = [&](size_t from, size_t to) {
        if (to > from) ::madvise(data + from, to - from, MADV_DONTNEED);
    };
    if (copied_to_ <= copied_from_ || offset <= copied_from_ || dropped_ >= copied_to_) {
        forget(dropped_, offset);
        dropped_ = offset;
        return;
    }
    // Below the copies, as before; the copies' whole 2 MiB pages below the
    // offset, mapped from the file again (MADV_DONTNEED would make them
    // zeros); past the copies, as before.
    forget(dropped_, copied_from_);
    dropped_ = std::max(dropped_, copied_from_);
    const size_t end = std::min(offset / kHugePage * kHugePage, copied_to_);
    if (end > copied_from_) {
        if (!mapFileOver(data, fd_, copied_from_, end - copied_from_))
            return;  // the copies stay, with their bytes
        copied_from_ = end;
        dropped_ = end;
    }
    if (copied_from_ >= copied_to_) {
        copied_from_ = copied_to_ = 0;
        forget(dropped_, offset);
        dropped_ = offset;
    }
}

bool InputFile::copyInHugePages(size_t offset, size_t length) {
    // In 4 KiB pages a copy would be walked no faster than the file.
    const TransparentHugePages thp = transparentHugePages();
    if (thp != TransparentHugePages::Always && thp != TransparentHugePages::Madvise) return false;
    if (!data_ || length == 0 || offset % kHugePage != 0 || length % kHugePage != 0 ||
        offset > size_ || length > size_ - offset ||
        reinterpret_cast<uintptr_t>(data_) % kHugePage != 0)
        return false;
    {
        const std::lock_guard lock(remapping_);
        if (offset < dropped_) return false;  // the reader is past it
    }
    char* stage = mapAlignedAnonymous(length, kHugePage, PROT_READ | PROT_WRITE, 0);
    if (!stage) return false;
    ::madvise(stage, length, MADV_HUGEPAGE);
    size_t got = 0;
    while (got < length) {
        const ssize_t n = ::pread(fd_, stage + got, length - got, off_t(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += size_t(n);
    }
    // Cut short: the file shrank, which the mapping's guard and shrank() report.
    if (got < length || ::mprotect(stage, length, PROT_READ) != 0) {
        ::munmap(stage, length);
        return false;
    }
    const std::lock_guard lock(remapping_);
    if (offset < dropped_ || ::mremap(stage, length, length, MREMAP_MAYMOVE | MREMAP_FIXED,
                                      static_cast<char*>(data_) + offset) == MAP_FAILED) {
        ::munmap(stage, length);
        return false;
    }
    if (copied_to_ <= copied_from_) {
        copied_from_ = offset;
        copied_to_ = offset + length;
    } else {
        copied_from_ = std::min(copied_from_, offset);
        copied_to_ = std::max(copied_to_, offset + length);
    }
    return true;
}

bool InputFile::shrank() const {
    if (slot_ >= 0 && g_slots[slot_].faulted.load(std::memory_order_acquire)) return true;
    struct stat st {};
    return fd_ >= 0 && ::fstat(fd_, &st) == 0 && size_t(st.st_size) < size_;
}

std::string InputFile::shrankMessage() const {
    struct stat st {};
    const long long now = fd_ >= 0 && ::fstat(fd_, &st) == 0 ? (long long)st.st_size : -1;
    return "the file shrank from " + std::to_string(size_) + " to " +
           (now >= 0 ? std::to_string(now) : std::string("fewer")) +
           " bytes while it was read (another process truncated or rewrote it): open it again "
           "once it is complete";
}

Result<ReadableFile> ReadableFile::open(const std::string& path, const std::string& what) {
    struct stat st {};
    auto opened = openRegular(path, st, what);
    if (!opened) return opened.error();
    ReadableFile f;
    f.fd_ = *opened;
    f.size_ = uint64_t(st.st_size);
    f.path_ = path;
    f.what_ = what;
    return f;
}

ReadableFile::ReadableFile(ReadableFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      path_(std::move(other.path_)),
      what_(std::move(other.what_)) {}

ReadableFile& ReadableFile::operator=(ReadableFile&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        size_ = other.size_;
        path_ = std::move(other.path_);
        what_ = std::move(other.what_);
    }
    return *this;
}

ReadableFile::~ReadableFile() {
    if (fd_ >= 0) ::close(fd_);
}

int ReadableFile::release() {
    return std::exchange(fd_, -1);
}

Result<size_t> ReadableFile::read(void* buffer, size_t n) {
    size_t got = 0;
    while (got < n) {
        const ssize_t r = ::read(fd_, static_cast<char*>(buffer) + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return makeError(path_ + ": cannot read " + what_ + " (" + errnoText(errno) + ")");
        if (r == 0) break;
        got += size_t(r);
    }
    return got;
}

namespace {

std::string sizeText(uint64_t bytes) {
    if (bytes >= (uint64_t(1) << 30) && bytes % (uint64_t(1) << 30) == 0)
        return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes) + " bytes";
}

Error tooLarge(const std::string& path, const std::string& what, uint64_t max_bytes) {
    return makeError(path + ": " + what + " is larger than " + sizeText(max_bytes) +
                     "; not one memscope wrote");
}

}  // namespace

Result<std::string> readWholeFile(const std::string& path, uint64_t max_bytes,
                                  const std::string& what) {
    auto file = ReadableFile::open(path, what);
    if (!file) return file.error();
    if (file->size() > max_bytes) return tooLarge(path, what, max_bytes);
    std::string all;
    all.reserve(size_t(file->size()));
    char buffer[1 << 16];
    for (;;) {
        auto n = file->read(buffer, sizeof buffer);
        if (!n) return n.error();
        if (*n == 0) break;
        if (all.size() + *n > max_bytes) return tooLarge(path, what, max_bytes);
        all.append(buffer, *n);
    }
    return all;
}

Result<void> forEachLine(const std::string& path, size_t max_line, uint64_t max_bytes,
                         const std::string& what,
                         const std::function<Result<void>(const FileLine&)>& take) {
    auto file = ReadableFile::open(path, what);
    if (!file) return file.error();
    if (file->size() > max_bytes) return tooLarge(path, what, max_bytes);
    std::vector<char> buffer(size_t(1) << 16);
    std::string pending;    // the start of a line cut by the end of a piece
    bool skipping = false;  // inside a line longer than max_line
    uint64_t total = 0, number = 0;
    auto emit = [&](std::string_view text, bool cut, bool too_long) -> Result<void> {
        FileLine l;
        l.text = text;
        l.number = ++number;
        l.cut = cut;
        l.too_long = too_long;
        return take(l);
    };
    for (;;) {
        auto n = file->read(buffer.data(), buffer.size());
        if (!n) return n.error();
        if (*n == 0) break;
        total += *n;
        if (total > max_bytes) return tooLarge(path, what, max_bytes);
        std::string_view piece(buffer.data(), *n);
        while (!piece.empty()) {
            const size_t end = piece.find('\n');
            const std::string_view part = piece.substr(0, end);
            if (!skipping) {
                if (pending.size() + part.size() > max_line) {
                    skipping = true;
                    pending.append(part.substr(0, std::min(part.size(), size_t(256))));
                } else {
                    pending.append(part);
                }
            }
            if (end == std::string_view::npos) break;
            if (auto r = emit(pending, false, skipping); !r) return r;
            pending.clear();
            skipping = false;
            piece.remove_prefix(end + 1);
        }
    }
    if (!pending.empty() || skipping)
        if (auto r = emit(pending, true, skipping); !r) return r;
    return {};
}

namespace {

Result<void> ownFolder(const std::string& path, const struct stat& st) {
    if (S_ISLNK(st.st_mode))
        return makeError(path + " is a symlink, not a folder memscope made; refused (remove it)");
    if (!S_ISDIR(st.st_mode))
        return makeError(path + " is " + kindOf(st.st_mode) + ", not a folder");
    if (st.st_uid != ::geteuid())
        return makeError(path + " belongs to another user (uid " + std::to_string(st.st_uid) +
                         "); refused (remove it, or record into a folder of your own)");
    return {};
}

}  // namespace

Result<void> checkOwnFolder(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        return makeError("cannot use the folder " + path + ": " + errnoText(errno));
    return ownFolder(path, st);
}

Result<void> makeOwnFolder(const std::string& path) {
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
        return makeError("cannot create the folder " + path + ": " + errnoText(errno));
    return checkOwnFolder(path);
}

Result<int> createExclusive(const std::string& path, int mode) {
    const int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode));
    if (fd < 0) {
        const int err = errno;
        if (err == EEXIST)
            return makeError("cannot create " + path +
                             ": something is already there (a file or a symlink); not written "
                             "through");
        return makeError("cannot create " + path + ": " + errnoText(err));
    }
    return fd;
}

Result<void> writeFileReplacing(const std::string& path,
                                const std::function<Result<void>(const std::string&)>& write) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string tmpl = (folder / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) return makeError("cannot write " + path + ": " + errnoText(errno));
    // mkstemp makes 0600: give the new file what the old one had, or the default.
    struct stat old {};
    if (::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
        ::fchmod(fd, old.st_mode & 07777);
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        ::fchmod(fd, 0666 & ~mask);
    }
    ::close(fd);
    const std::string temp = tmpl;
    auto fail = [&](std::string message) -> Result<void> {
        ::unlink(temp.c_str());
        return makeError(std::move(message));
    };
    Result<void> written = write(temp);
    if (!written) {
        // The user knows the file by its name, not by the temporary's.
        std::string message = written.message();
        for (size_t at; (at = message.find(temp)) != std::string::npos;)
            message.replace(at, temp.size(), path);
        return fail(std::move(message));
    }
    const int sync_fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
    if (sync_fd < 0) return fail("cannot write " + path + ": " + errnoText(errno));
    const bool synced = ::fsync(sync_fd) == 0;
    const int sync_err = errno;
    ::close(sync_fd);
    if (!synced) return fail("cannot write " + path + ": " + errnoText(sync_err));
    if (::rename(temp.c_str(), path.c_str()) != 0)
        return fail("cannot replace " + path + ": " + errnoText(errno));
    return {};
}

}  // namespace memscope
