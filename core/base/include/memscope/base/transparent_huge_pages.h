#pragma once
// What the kernel does with transparent huge pages (2 MiB), from
// /sys/kernel/mm/transparent_hugepage/enabled: whether memory that asks for
// them (madvise(MADV_HUGEPAGE)) gets them.

namespace memscope {

enum class TransparentHugePages {
    Always,   // every large enough anonymous mapping
    Madvise,  // the mappings that ask
    Never,
    Unknown,  // not Linux, or the file unreadable
};

// Read once per process.
TransparentHugePages transparentHugePages();

}  // namespace memscope
