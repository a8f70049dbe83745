#pragma once
// Nanoseconds since the Unix epoch that never go backwards: the wall clock read
// once, advanced by the steady clock, so event order matches time order.

#include <chrono>
#include <cstdint>

namespace memscope::trainer {

class EpochClock {
public:
    EpochClock()
        : wall0_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count()),
          steady0_(std::chrono::steady_clock::now()) {}

    int64_t now() const {
        return wall0_ + std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - steady0_)
                            .count();
    }

private:
    int64_t wall0_;
    std::chrono::steady_clock::time_point steady0_;
};

}  // namespace memscope::trainer
