// parallelFor: every index exactly once, on at most the threads asked for.
#include "memscope/base/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace memscope {
namespace {

TEST(ParallelFor, RunsEveryIndexOnceOnAtMostTheThreadsAsked) {
    for (unsigned threads : {1u, 2u, 5u}) {
        std::vector<std::atomic<int>> hits(1000);
        std::mutex m;
        std::set<std::thread::id> ids;
        parallelFor(hits.size(), threads, [&](size_t i) {
            hits[i].fetch_add(1);
            std::lock_guard lock(m);
            ids.insert(std::this_thread::get_id());
        });
        for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
        EXPECT_LE(ids.size(), threads);
    }
}

TEST(ParallelFor, NoItemsRunNothingAndFewItemsFewThreads) {
    int calls = 0;
    parallelFor(0, 4, [&](size_t) { ++calls; });
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(workerCount(8, 3), 3u);
    EXPECT_EQ(workerCount(2, 100), 2u);
    EXPECT_GE(workerCount(0, 100), 1u);  // the machine's hardware threads
    EXPECT_EQ(workerCount(0, 0), 1u);
}

}  // namespace
}  // namespace memscope
