#pragma once
// Counts C++ allocations per thread (operator new is replaced in this test
// binary; everything else is unchanged): for tests of code that must not
// allocate on the training thread.

#include <cstdint>

namespace memscope::test {

uint64_t allocationsOnThisThread();

}  // namespace memscope::test
