#include "clock.h"

#include <cupti.h>
#include <time.h>

namespace memscope::cupti {
namespace {
int64_t read(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t cuptiNowNs() {
    uint64_t t = 0;
    if (cuptiGetTimestamp(&t) == CUPTI_SUCCESS && t != 0) return static_cast<int64_t>(t);
    return wallNowNs();
}

int64_t wallNowNs() {
    return read(CLOCK_REALTIME);
}
int64_t monotonicNowNs() {
    return read(CLOCK_MONOTONIC);
}

}  // namespace memscope::cupti
