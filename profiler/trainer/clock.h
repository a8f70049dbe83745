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

// A (ticks, nanoseconds) pair read together: the nanoseconds read between two
// tick reads, the pair placed at their midpoint. Of `tries` reads, the one
// whose two tick reads are closest: a read the thread was preempted in the
// middle of (a loaded machine does that often) would shift every record
// converted against it by the preemption, and put a free recorded before a
// phase began after the phase's start. `ticks` and `ns` are the clocks, for tests.
struct TickPair {
    uint64_t ticks = 0;
    int64_t ns = 0;
};
template <class Ticks, class Ns>
TickPair readTickPair(Ticks ticks, Ns ns, int tries) {
    TickPair best;
    uint64_t best_width = UINT64_MAX;
    for (int i = 0; i < tries; ++i) {
        const uint64_t before = ticks();
        const int64_t at = ns();
        const uint64_t after = ticks();
        const uint64_t width = after - before;
        if (after < before || width >= best_width) continue;
        best_width = width;
        best = TickPair{before + width / 2, at};
    }
    if (best_width == UINT64_MAX) best = TickPair{ticks(), ns()};  // no try read forward
    return best;
}

class TickMapper {
public:
    TickMapper() { sample(); }

    // A new pair; records read after it convert against it and the one before.
    void sample() {
        previous_ = latest_;
        latest_ =
            readTickPair([] { return TickClock::now(); }, [this] { return clock_.now(); }, kTries);
        if (previous_.ticks == 0) previous_ = latest_;
    }

    int64_t toEpochNs(uint64_t ticks) const {
        const TickPair& a = previous_;
        const TickPair& b = latest_;
        if (b.ticks <= a.ticks) return b.ns;  // one pair so far: nothing read yet
        const double per_tick =
            static_cast<double>(b.ns - a.ns) / static_cast<double>(b.ticks - a.ticks);
        // Signed: a record may precede the older pair (written before it, read after).
        const double from_a = static_cast<double>(static_cast<int64_t>(ticks - a.ticks));
        return a.ns + static_cast<int64_t>(from_a * per_tick);
    }

private:
    // A read is about 50 ns; eight cost nothing beside a drain.
    static constexpr int kTries = 8;
    EpochClock clock_;
    TickPair previous_, latest_;
};

}  // namespace memscope::trainer
