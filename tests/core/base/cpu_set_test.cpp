// CpuSet: the normalized list, the kernel's list notation, and a thread's
// affinity set and read back.

#include "memscope/base/cpu_set.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <thread>

using memscope::CpuSet;

TEST(CpuSet, KeepsEachCpuOnceInOrder) {
    const CpuSet set({5, 1, 3, 1, -2, 0});
    EXPECT_EQ(set.cpus(), (std::vector<int>{0, 1, 3, 5}));
    EXPECT_TRUE(set.contains(3));
    EXPECT_FALSE(set.contains(2));
    EXPECT_FALSE(set.contains(-2));
    EXPECT_EQ(set.without(3).cpus(), (std::vector<int>{0, 1, 5}));
    EXPECT_EQ(set.without(7), set);
    EXPECT_TRUE(CpuSet({4}).without(4).empty());
}

TEST(CpuSet, ListsRangesAsTheKernelDoes) {
    EXPECT_EQ(CpuSet().toString(), "");
    EXPECT_EQ(CpuSet({1}).toString(), "1");
    EXPECT_EQ(CpuSet({0, 1}).toString(), "0-1");
    EXPECT_EQ(CpuSet({0, 1, 2, 3, 6}).toString(), "0-3,6");
    EXPECT_EQ(CpuSet({0, 2, 4, 5, 6, 9, 10}).toString(), "0,2,4-6,9-10");
}

TEST(CpuSet, TheCallingThreadRunsWhereItsAffinitySays) {
    const CpuSet mine = CpuSet::ofCallingThread();
    ASSERT_FALSE(mine.empty());
    const int now = sched_getcpu();
    ASSERT_GE(now, 0);
    EXPECT_TRUE(mine.contains(now)) << mine.toString() << " against CPU " << now;
    const auto beside = memscope::cpusBesideCallingThread();
    if (mine.size() == 1) {
        EXPECT_FALSE(beside.has_value());
        return;
    }
    // The thread may have moved between the two calls; the answer is still
    // every allowed CPU but one.
    ASSERT_TRUE(beside.has_value());
    EXPECT_EQ(beside->size(), mine.size() - 1);
    for (int cpu : beside->cpus()) EXPECT_TRUE(mine.contains(cpu));
}

TEST(CpuSet, AppliesToAnotherThread) {
    const CpuSet mine = CpuSet::ofCallingThread();
    ASSERT_FALSE(mine.empty());
    const CpuSet one({mine.cpus().back()});
    std::atomic<bool> stop{false};
    std::atomic<int> ran_on{-1};
    std::thread helper([&] {
        while (!stop.load()) ran_on.store(sched_getcpu());
    });
    ASSERT_TRUE(one.applyTo(helper.native_handle()));
    EXPECT_EQ(CpuSet::ofThread(helper.native_handle()), one);
    // Once moved, it runs only there.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ran_on.store(-1);
    while (ran_on.load() < 0) std::this_thread::yield();
    EXPECT_EQ(ran_on.load(), one.cpus().front());
    // Refused: nothing, or a CPU beyond what the system can name.
    EXPECT_FALSE(CpuSet().applyTo(helper.native_handle()));
    EXPECT_FALSE(CpuSet({CPU_SETSIZE + 1}).applyTo(helper.native_handle()));
    EXPECT_EQ(CpuSet::ofThread(helper.native_handle()), one);
    stop.store(true);
    helper.join();
    // The caller's own affinity did not change.
    EXPECT_EQ(CpuSet::ofCallingThread(), mine);
}
