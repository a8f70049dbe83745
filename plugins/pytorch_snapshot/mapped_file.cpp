#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace memscope::pytorch_snapshot {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return makeError("cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return makeError("cannot read " + path + ": not a regular file");
    }
    const size_t size = size_t(st.st_size);
    void* data = nullptr;
    if (size > 0) {
        data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            return makeError("cannot map " + path + ": " + std::strerror(err));
        }
        ::madvise(data, size, MADV_SEQUENTIAL);
    }
    ::close(fd);
    return std::unique_ptr<MappedFile>(new MappedFile(data, size));
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(data_, size_);
}

void MappedFile::dropBefore(size_t offset) {
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    offset = offset / page * page;
    if (!data_ || offset <= dropped_) return;
    ::madvise(static_cast<char*>(data_) + dropped_, offset - dropped_, MADV_DONTNEED);
    dropped_ = offset;
}

}  // namespace memscope::pytorch_snapshot
