#include "thread_allocations.h"

#include <cstdlib>
#include <new>

namespace {
thread_local uint64_t t_allocations = 0;
}

namespace memscope::test {
uint64_t allocationsOnThisThread() {
    return t_allocations;
}
}  // namespace memscope::test

// The replaceable forms that the others (nothrow, array, sized) call by
// default; the aligned forms keep their defaults, which pair among themselves.
void* operator new(std::size_t size) {
    ++t_allocations;
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}

void operator delete(void* p) noexcept {
    std::free(p);
}

void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
