#pragma once
// A read-only memory map of a whole file: the unpickler reads strings in place.
// Pages already parsed can be dropped (they fault back in from the page cache if
// a memo reference needs them), which keeps peak RSS near the size of the Trace.

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "memscope/result.h"

namespace memscope::pytorch_snapshot {

class MappedFile {
public:
    static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }
    // Tells the kernel that [0, offset) is not needed for now.
    void dropBefore(size_t offset);

private:
    MappedFile(void* data, size_t size) : data_(data), size_(size) {}
    void* data_ = nullptr;
    size_t size_ = 0;
    size_t dropped_ = 0;
};

}  // namespace memscope::pytorch_snapshot
