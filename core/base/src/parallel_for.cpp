#include "memscope/base/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

namespace memscope {

unsigned hardwareThreads() {
    static const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    return threads;
}

unsigned workerCount(unsigned requested, size_t n) {
    unsigned threads = requested ? requested : hardwareThreads();
    if (n < threads) threads = unsigned(std::max<size_t>(n, 1));
    return threads;
}

void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
    if (n == 0) return;
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
    };
    std::vector<std::thread> pool;
    const unsigned count = workerCount(threads, n);
    pool.reserve(count - 1);
    try {
        for (unsigned t = 1; t < count; ++t) pool.emplace_back(work);
    } catch (const std::system_error&) {
        // Fewer threads than asked for (a process at its limit): those
        // started, and this one, take every item all the same.
    }
    work();
    for (std::thread& t : pool) t.join();
}

}  // namespace memscope
