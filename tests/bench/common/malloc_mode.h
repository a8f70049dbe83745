#pragma once
// One line for a benchmark's output: how this process's malloc backs large
// blocks (memscope/base/huge_page_malloc.h), which moves open times by a
// quarter on a virtual machine, so that figures say what they were taken with.
#include "memscope/base/huge_page_malloc.h"

namespace memscope::bench {

inline const char* mallocMode() {
    return hugePageMalloc() == HugePageMalloc::Relaunched
               ? "glibc, large blocks in 2 MiB pages (MEMSCOPE_HUGE_PAGES=0 for 4 KiB)"
               : "glibc, 4 KiB pages (huge pages turned off or not available here)";
}

}  // namespace memscope::bench
