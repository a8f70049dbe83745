#pragma once
// Work shared by a few threads over n independent items: each thread takes
// the next unclaimed index until none is left, so a slow item (a large rank)
// holds up only its own thread. Used where many files are reduced one by one
// (a folder of ranks) and memory must stay at `threads` items, not n.

#include <cstddef>
#include <functional>

namespace memscope {

// The machine's hardware threads (at least 1), read once:
// std::thread::hardware_concurrency reads sysfs on every call, a few system
// calls that the GUI's per-frame reductions were paying each frame.
unsigned hardwareThreads();

// The number of worker threads for `n` items: `requested`, or the machine's
// hardware threads when 0; never more than n, at least 1.
unsigned workerCount(unsigned requested, size_t n);

// Calls fn(i) for every i in [0, n), on workerCount(threads, n) threads (the
// calling thread is one of them). Items start in index order; fn must be
// safe to call concurrently for different i. Returns when all have run; a
// thread that cannot be started leaves its share to the others (never throws
// for that). Also used per frame by the GUI's reductions.
void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)>& fn);

}  // namespace memscope
