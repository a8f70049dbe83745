// One clock for every part of a recording: CUPTI's timestamps (memory
// records, NVTX phases) must be CLOCK_REALTIME nanoseconds, the clock of the
// PyTorch allocator's time_us (wall-clock µs), of Python's time.time_ns() in
// the startup hook and of the CPU capture library; the recording merge lines
// them up by value. cuptiGetTimestamp works without a driver.
#include <cupti.h>
#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>

namespace {

int64_t realtimeNs() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

TEST(Clock, CuptiTimestampsAreRealtimeNanoseconds) {
    for (int i = 0; i < 100; ++i) {
        const int64_t before = realtimeNs();
        uint64_t cupti = 0;
        ASSERT_EQ(cuptiGetTimestamp(&cupti), CUPTI_SUCCESS);
        const int64_t after = realtimeNs();
        // A millisecond of slack: CUPTI may read a coarser source.
        EXPECT_GE(int64_t(cupti), before - 1'000'000);
        EXPECT_LE(int64_t(cupti), after + 1'000'000);
    }
}

}  // namespace
