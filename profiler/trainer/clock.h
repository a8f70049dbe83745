#pragma once
// Time for the recording.
//
// EpochClock: nanoseconds since the Unix epoch that never go backwards: the
// wall clock read once per process, advanced by the steady clock, so event
// order matches time order and every EpochClock of the process agrees.
//
// TickClock: what the allocator hook reads, because it reads the time for
// every tensor: the CPU's time-stamp counter (about 8 ns) where the kernel
// itself keeps time with it, else the steady clock (about 25 ns through the
// vDSO here). TickMapper turns ticks into EpochClock nanoseconds on the
// reading side, by interpolating between (ticks, nanoseconds) pairs it takes
// as it reads, so no calibration constant can drift.

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace memscope::trainer {

class EpochClock {
public:
    int64_t now() const {
        const Anchor& a = anchor();
        return a.wall0 + std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - a.steady0)
                             .count();
    }

private:
    struct Anchor {
        int64_t wall0;
        std::chrono::steady_clock::time_point steady0;
    };
    static const Anchor& anchor() {
        static const Anchor a{std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count(),
                              std::chrono::steady_clock::now()};
        return a;
    }
};

class TickClock {
public:
    // Whether ticks are the time-stamp counter (decided when the program starts).
    static bool countsCycles() { return counts_cycles_; }

    static uint64_t now() {
#if defined(__x86_64__)
        if (countsCycles()) return __rdtsc();
#endif
        return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now().time_since_epoch())
                                         .count());
    }

private:
    static const bool counts_cycles_;
};

class TickMapper {
public:
    TickMapper() { sample(); }

    // A new pair; records read after it convert against it and the one before.
    void sample() {
        previous_ = latest_;
        latest_ = Pair{TickClock::now(), clock_.now()};
        if (previous_.ticks == 0) previous_ = latest_;
    }

    int64_t toEpochNs(uint64_t ticks) const {
        const Pair& a = previous_;
        const Pair& b = latest_;
        if (b.ticks <= a.ticks) return b.ns;  // one pair so far: nothing read yet
        const double per_tick =
            static_cast<double>(b.ns - a.ns) / static_cast<double>(b.ticks - a.ticks);
        // Signed: a record may precede the older pair (written before it, read after).
        const double from_a = static_cast<double>(static_cast<int64_t>(ticks - a.ticks));
        return a.ns + static_cast<int64_t>(from_a * per_tick);
    }

private:
    struct Pair {
        uint64_t ticks = 0;
        int64_t ns = 0;
    };
    EpochClock clock_;
    Pair previous_, latest_;
};

}  // namespace memscope::trainer
