// The ledger's categorization rules on hand-made allocation sequences, read
// back through core's native reader.

#include "ledger.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "capture.h"
#include "memscope/format/native_format.h"
#include "reporting_threads.h"
#include "run_context.h"
#include "test_util.h"
#include "thread_allocations.h"

using namespace memscope;
using namespace memscope::trainer;
using memscope::trainer::test::scratchTrace;

TEST(AllocationLedger, CategoriesFromTagsAndHindsight) {
    const std::string path = scratchTrace("ledger-categories");
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        ledger.onAlloc(0x1000, 100, 0, 1);  // a parameter
        ledger.tag(0x1000, Category::Parameter);
        const uint64_t mark = ledger.mark();
        ledger.onAlloc(0x2000, 200, 0, 2);  // saved for backward
        ledger.onAlloc(0x3000, 300, 0, 3);  // freed within forward
        ledger.onFree(0x3000, 300, 0, 4);
        ledger.classifyLiveSince(mark, Category::Activation);
        ledger.onAlloc(0x4000, 400, 0, 5);  // backward scratch
        ledger.onFree(0x2000, 200, 0, 6);
        ledger.onFree(0x4000, 400, 0, 7);
        ledger.onFree(0x9000, 50, 0, 8);  // allocated before recording
        ledger.commit();
        ledger.onFree(0x1000, 100, 0, 9);  // after the commit: keeps its category
        ledger.commit();
        EXPECT_EQ(ledger.counts().unmatched_frees, 1u);
        ASSERT_TRUE((*writer)->close().ok());
    }
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    ASSERT_EQ(trace->events.size(), 9u);
    const auto cat = [&](size_t i) { return trace->events[i].category; };
    EXPECT_EQ(cat(0), Category::Parameter);
    EXPECT_EQ(cat(1), Category::Activation);
    EXPECT_EQ(cat(2), Category::Temporary);
    EXPECT_EQ(cat(3), Category::Temporary);  // the free carries its alloc's category
    EXPECT_EQ(cat(4), Category::Temporary);
    EXPECT_EQ(cat(5), Category::Activation);
    EXPECT_EQ(cat(6), Category::Temporary);
    EXPECT_EQ(cat(7), Category::Unknown);
    EXPECT_EQ(cat(8), Category::Parameter);
    EXPECT_EQ(trace->events[3].kind, EventKind::FreeCompleted);
    std::filesystem::remove(path);
}

// The hook's side is lock-free: four threads report at once into the shared
// log while the owner (this thread) reports into its own and reads; every
// event arrives once, frees match their allocations across the two logs, and
// after a commit has sized the logs the hook allocates nothing.
TEST(AllocationLedger, ConcurrentReportsAndNoAllocationInTheHook) {
    const std::string path = scratchTrace("ledger-concurrent");
    constexpr int kThreads = 4, kPairs = 20000;
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        auto report = [&](int t) {
            for (int i = 0; i < kPairs; ++i) {
                const uint64_t ptr = (static_cast<uint64_t>(t + 1) << 32) + uint64_t(i) * 64;
                ledger.onAlloc(ptr, 64, 0, i);
                ledger.onFree(ptr, 64, 0, i + 1);
            }
        };
        auto step = [&] {
            std::vector<std::thread> threads;
            for (int t = 0; t < kThreads; ++t) threads.emplace_back(report, t);
            report(kThreads);  // the owner's own, meanwhile
            for (int k = 0; k < 100; ++k) (void)ledger.mark();
            for (auto& t : threads) t.join();
            ledger.commit();
        };
        step();
        auto c = ledger.counts();
        EXPECT_EQ(c.allocs, uint64_t{kThreads + 1} * kPairs);
        EXPECT_EQ(c.frees, uint64_t{kThreads + 1} * kPairs);
        EXPECT_EQ(c.unmatched_frees, 0u);
        // The commit reserved twice this step in each log: a step as busy
        // allocates nothing.
        const uint64_t before = c.hook_allocations;
        step();
        EXPECT_EQ(ledger.counts().hook_allocations, before);
        ASSERT_TRUE((*writer)->close().ok());
    }
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    EXPECT_EQ(trace->events.size(), 2u * 2 * (kThreads + 1) * kPairs);
    std::filesystem::remove(path);
}

// An allocation on one thread freed on another, both ways between the owner's
// log and the shared one, many times over while the reading thread reads:
// the free is always read after its allocation (nothing unmatched, sizes
// taken from the allocation), and tags from the owner reach allocations made
// elsewhere.
TEST(AllocationLedger, HandOffsBetweenThreadsKeepTheirOrder) {
    const std::string path = scratchTrace("ledger-handoff");
    constexpr int kRounds = 20000;
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        // One mailbox each way: an address handed over, 0 when empty.
        std::atomic<uint64_t> to_other{0}, to_owner{0};
        const auto take = [](std::atomic<uint64_t>& box) {
            uint64_t v;
            while ((v = box.exchange(0, std::memory_order_acq_rel)) == 0) std::this_thread::yield();
            return v;
        };
        std::thread other([&] {
            for (int i = 0; i < kRounds; ++i) {
                ledger.onFree(take(to_other), 0, 0, 2 * i + 1);  // the owner's allocation
                const uint64_t mine = 0x900000000 + 64 * uint64_t(i);
                ledger.onAlloc(mine, 48, 0, 2 * i + 1);
                to_owner.store(mine, std::memory_order_release);
            }
        });
        for (int i = 0; i < kRounds; ++i) {
            const uint64_t ptr = 0x100000000 + 64 * uint64_t(i);
            ledger.onAlloc(ptr, 32, 0, 2 * i);
            to_other.store(ptr, std::memory_order_release);
            const uint64_t theirs = take(to_owner);
            ledger.tag(theirs, Category::Input);
            ledger.onFree(theirs, 0, 0, 2 * i + 2);
            if (i % 1000 == 999) ledger.commit();
        }
        other.join();
        ledger.commit();
        const auto c = ledger.counts();
        EXPECT_EQ(c.allocs, 2u * kRounds);
        EXPECT_EQ(c.frees, 2u * kRounds);
        EXPECT_EQ(c.unmatched_frees, 0u);
        ASSERT_TRUE((*writer)->close().ok());
    }
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    ASSERT_EQ(trace->events.size(), 4u * kRounds);
    size_t inputs = 0;
    for (const Event& e : trace->events) {
        if (e.kind != EventKind::FreeCompleted) continue;
        EXPECT_EQ(e.size, e.category == Category::Input ? 48u : 32u);
        inputs += e.category == Category::Input;
    }
    EXPECT_EQ(inputs, size_t{kRounds});
    std::filesystem::remove(path);
}

// Phases are log records: the ledger's thread names them and hands them to
// the writer at each commit, before the step's events. The events carry the
// ids the phases get in the file, a phase still open at a commit gets its end
// later, and a Step phase is named by its leaf and its step.
TEST(RunContext, PhasesReachTheWriterAtCommitWithTheIdsEventsCarry) {
    const std::string path = scratchTrace("ledger-phases");
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        RunContext ctx(&ledger);
        {
            PhaseScope step(ctx, PhaseKind::Step, "step", 0);
            {
                PhaseScope forward(ctx, PhaseKind::Forward, "forward");
                ledger.onAlloc(0x1000, 64, 0, ctx.now());
            }
            ctx.commit();  // "step 0" is still open
            ledger.onAlloc(0x2000, 64, 0, ctx.now());
        }
        {
            PhaseScope step(ctx, PhaseKind::Step, "step", 1);
            ledger.onFree(0x1000, 0, 0, ctx.now());
        }
        ctx.commit();
        const auto counts = ledger.counts();
        EXPECT_EQ(counts.allocs, 2u);
        EXPECT_EQ(counts.refused_phase_batches, 0u);
        ASSERT_TRUE((*writer)->close().ok());
    }
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    ASSERT_EQ(trace->phases.size(), 3u);
    EXPECT_EQ(trace->string(trace->phases[0].name), "step 0");
    EXPECT_EQ(trace->string(trace->phases[1].name), "step 0 / forward");
    EXPECT_EQ(trace->phases[1].parent, PhaseId(1));
    EXPECT_EQ(trace->phases[1].step, 0);  // inherited from the step
    EXPECT_EQ(trace->string(trace->phases[2].name), "step 1");
    EXPECT_EQ(trace->phases[2].step, 1);
    EXPECT_EQ(trace->phases[2].parent, PhaseId());
    ASSERT_EQ(trace->events.size(), 3u);
    EXPECT_EQ(trace->events[0].phase, PhaseId(2));
    EXPECT_EQ(trace->events[1].phase, PhaseId(1));
    EXPECT_EQ(trace->events[2].phase, PhaseId(3));
    // Ended after its hand-over, at or after the event inside it.
    EXPECT_GE(trace->phases[0].end, trace->events[1].time);
    EXPECT_LE(trace->phases[1].end, trace->events[1].time);
    std::filesystem::remove(path);
}

namespace {

// The affinity of this process's threads named `name` (/proc/self/task/*/comm).
std::vector<CpuSet> affinityOfThreadsNamed(const std::string& name) {
    std::vector<CpuSet> out;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string line;
        if (!std::getline(comm, line) || line != name) continue;
        cpu_set_t mask;
        CPU_ZERO(&mask);
        const auto tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
        if (sched_getaffinity(tid, sizeof mask, &mask) != 0) continue;
        std::vector<int> cpus;
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
        out.emplace_back(std::move(cpus));
    }
    return out;
}

}  // namespace

// The recording's threads keep off the training thread's core (cpu_set.h),
// and the ledger's thread, which yields its core every kYieldRecords records,
// still reads every record in order: 20,000 events in steps of 2,000, read
// while the training thread writes more.
TEST(AllocationLedger, ItsThreadsKeepOffTheOwnersCoreAndReadEverything) {
    const auto elsewhere = cpusBesideCallingThread();
    if (!elsewhere) GTEST_SKIP() << "this thread may run on one CPU only: nowhere else to go";
    const CpuSet mine = CpuSet::ofCallingThread();
    const std::string path = scratchTrace("ledger-placement");
    constexpr int kSteps = 10, kPerStep = 1000;
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        ASSERT_TRUE((*writer)->keepThreadOn(*elsewhere));
        ASSERT_TRUE(ledger.keepThreadOn(*elsewhere));
        // Each thread names itself once it runs.
        std::vector<CpuSet> writers, readers;
        for (int tries = 0; tries < 500 && (writers.empty() || readers.empty()); ++tries) {
            if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            writers = affinityOfThreadsNamed("memscope-writer");
            readers = affinityOfThreadsNamed("memscope-ledger");
        }
        ASSERT_EQ(writers.size(), 1u);
        ASSERT_EQ(readers.size(), 1u);
        EXPECT_EQ(writers[0], *elsewhere) << writers[0].toString();
        EXPECT_EQ(readers[0], *elsewhere) << readers[0].toString();
        EXPECT_EQ(CpuSet::ofCallingThread(), mine);  // the owner itself stays free
        int64_t t = 0;
        for (int step = 0; step < kSteps; ++step) {
            for (int i = 0; i < kPerStep; ++i) {
                const uint64_t ptr = 0x10000 + 0x100 * static_cast<uint64_t>(i);
                ledger.onAlloc(ptr, 64 + static_cast<uint64_t>(i), 0, ++t);
                ledger.onFree(ptr, 0, 0, ++t);
            }
            ledger.commit();
            std::this_thread::sleep_for(std::chrono::milliseconds(3));  // read meanwhile
        }
        const auto counts = ledger.counts();
        EXPECT_EQ(counts.allocs, uint64_t{kSteps} * kPerStep);
        EXPECT_EQ(counts.frees, uint64_t{kSteps} * kPerStep);
        EXPECT_EQ(counts.unmatched_frees, 0u);
        ASSERT_TRUE((*writer)->close().ok());
    }
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    ASSERT_EQ(trace->events.size(), size_t{2} * kSteps * kPerStep);
    for (size_t k = 0; k < trace->events.size(); ++k) {
        const Event& e = trace->events[k];
        ASSERT_EQ(e.time, static_cast<int64_t>(k + 1)) << "event " << k;
        ASSERT_EQ(e.kind, k % 2 == 0 ? EventKind::Alloc : EventKind::FreeCompleted) << k;
        // Each free carries its allocation's size, found by the ledger.
        ASSERT_EQ(e.size, 64 + (k / 2) % kPerStep) << "event " << k;
    }
    std::filesystem::remove(path);
}

// The training thread allocates nothing that the recording keeps: memory kept
// from its heap would sit among the step's tensors (ledger.h). Once the first
// step has brought its leaves, steps of phases, events, tags and a commit
// allocate nothing on it, and the phases still arrive whole, in order, with
// the ids the events carry. Phases that end after the last commit arrive too.
TEST(RunContext, StepsAllocateNothingOnTheTrainingThread) {
    const std::string path = scratchTrace("ledger-no-allocation");
    constexpr int kSteps = 300, kBlocks = 4;
    const std::vector<std::string> block_leaves = {"block 0", "block 1", "block 2",
                                                   "block 3 with a leaf longer than SSO"};
    uint64_t during = 0;
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        RunContext ctx(&ledger);
        uint64_t before = 0;
        for (int step = 0; step < kSteps; ++step) {
            if (step == 1) before = memscope::test::allocationsOnThisThread();
            {
                PhaseScope s(ctx, PhaseKind::Step, "step", step);
                PhaseScope forward(ctx, PhaseKind::Forward, "forward");
                for (int b = 0; b < kBlocks; ++b) {
                    PhaseScope block(ctx, PhaseKind::Block, block_leaves[size_t(b)], -1, b);
                    const uint64_t address = 0x10000 + 0x100 * uint64_t(b);
                    ledger.onAllocNow(address, 64, 0);
                    ctx.tag(reinterpret_cast<const void*>(address), Category::Activation);
                    ledger.onFreeNow(address, 0, 0);
                }
            }
            ctx.commit();
            if (step % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(15));
        }
        during = memscope::test::allocationsOnThisThread() - before;
        PhaseScope tail(ctx, PhaseKind::Range, "after the last commit");
        ctx.end();  // the scope's own end then finds nothing open
        EXPECT_EQ(ledger.counts().refused_phase_batches, 0u);
        ASSERT_TRUE((*writer)->close().ok());
    }
    EXPECT_EQ(during, 0u);
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    constexpr size_t kPerStep = 2 + kBlocks;
    ASSERT_EQ(trace->phases.size(), kSteps * kPerStep + 1);
    const auto name = [&](size_t i) { return std::string(trace->string(trace->phases[i].name)); };
    const size_t s = 250 * kPerStep;
    EXPECT_EQ(name(s), "step 250");
    EXPECT_EQ(name(s + 1), "step 250 / forward");
    EXPECT_EQ(name(s + 5), "step 250 / forward / " + block_leaves[3]);
    EXPECT_EQ(trace->phases[s + 5].block, 3);
    EXPECT_EQ(trace->phases[s + 5].step, 250);
    EXPECT_EQ(trace->phases[s + 5].parent, PhaseId(uint32_t(s + 2)));
    EXPECT_EQ(name(kSteps * kPerStep), "after the last commit");
    EXPECT_GT(trace->phases.back().end, trace->phases.back().start);
    ASSERT_EQ(trace->events.size(), size_t{2 * kSteps * kBlocks});
    for (size_t i = 0; i < trace->events.size(); ++i) {
        const size_t step = i / (2 * kBlocks), block = i % (2 * kBlocks) / 2;
        ASSERT_EQ(trace->events[i].phase, PhaseId(uint32_t(step * kPerStep + 3 + block))) << i;
        ASSERT_EQ(trace->events[i].category, Category::Activation) << i;
    }
    std::filesystem::remove(path);
}

// The hook stamps records with TickClock ticks (the time-stamp counter where
// the kernel keeps time with it); the reading side turns them into the
// EpochClock nanoseconds that the phases use: each event's time lies between
// clock readings taken around its report, across reads of the log 10 ms and
// more apart, and one thread's events keep their order.
TEST(AllocationLedger, TicksBecomeEpochNanoseconds) {
    const std::string path = scratchTrace("ledger-ticks");
    constexpr int kEvents = 60;
    std::vector<std::pair<int64_t, int64_t>> around;  // clock before and after each report
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        const EpochClock clock;
        for (int i = 0; i < kEvents; ++i) {
            const int64_t before = clock.now();
            ledger.onAllocNow(0x1000 + 64 * uint64_t(i), 64, 0);
            around.emplace_back(before, clock.now());
            if (i % 10 == 9) {
                ledger.commit();
                std::this_thread::sleep_for(std::chrono::milliseconds(12));
            }
        }
        ledger.finish();
        ASSERT_TRUE((*writer)->close().ok());
    }
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    ASSERT_EQ(trace->events.size(), size_t{kEvents});
    // Interpolation between two clock readings up to ~25 ms apart. The
    // kernel slews the clock against the counter by up to 500 ppm (NTP's
    // bound): 12.5 us over that span, hence 20 us of slack. A wrong scale or
    // offset would be off by milliseconds.
    constexpr int64_t kSlack = 20'000;
    for (int i = 0; i < kEvents; ++i) {
        const int64_t t = trace->events[size_t(i)].time;
        EXPECT_GE(t, around[size_t(i)].first - kSlack) << i;
        EXPECT_LE(t, around[size_t(i)].second + kSlack) << i;
        if (i > 0) {
            EXPECT_GE(t, trace->events[size_t(i) - 1].time) << i;
        }
    }
    std::filesystem::remove(path);
}

// The ledger's live table against std::unordered_map, over a churn of puts,
// erases and finds on few addresses (long probe runs, wrap-around, growth).
TEST(AddressTable, AgreesWithAHashMap) {
    struct Value {
        uint32_t a = 7;
        uint64_t b = 0;
    };
    memscope::trainer::AddressTable<Value> table;
    std::unordered_map<uint64_t, Value> reference;
    std::mt19937_64 rng(1);
    for (int i = 0; i < 400000; ++i) {
        const uint64_t key = 0x1000 + 64 * (rng() % 3000);
        switch (rng() % 3) {
            case 0:
                table.put(key, Value{static_cast<uint32_t>(i), key});
                reference[key] = Value{static_cast<uint32_t>(i), key};
                break;
            case 1:
                table.erase(key);
                reference.erase(key);
                break;
            default: {
                const Value* found = table.find(key);
                auto it = reference.find(key);
                ASSERT_EQ(found == nullptr, it == reference.end()) << i;
                if (found) {
                    ASSERT_EQ(found->a, it->second.a) << i;
                }
            }
        }
    }
    EXPECT_EQ(table.size(), reference.size());
    // 0 marks an empty slot: never a key (a deleter may see a null context).
    table.put(0, Value{});
    EXPECT_EQ(table.find(0), nullptr);
    EXPECT_EQ(table.size(), reference.size());
}

// The end of a capture waits for reports still running on other threads, with
// or without the fast barrier, reentrant reports included, and threads beyond
// the per-thread flags (which share a counter) are waited for too.
TEST(ReportingThreads, WaitingWaitsForReportsInFlight) {
    ReportingThreads::enableFastBarrier();  // either outcome must work
    const auto check = [](int round) {
        std::atomic<bool> entered{false}, release{false}, waited{false};
        std::thread reporter([&] {
            ReportGuard outer;
            {
                ReportGuard inner;  // reentrant: leaving it keeps the thread busy
            }
            entered = true;
            while (!release) std::this_thread::yield();
        });
        while (!entered) std::this_thread::yield();
        std::thread waiter([&] {
            ReportingThreads::waitForReporters();
            waited = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        EXPECT_FALSE(waited) << round;
        release = true;
        reporter.join();
        waiter.join();
        EXPECT_TRUE(waited) << round;
    };
    check(0);  // a thread with a flag of its own
    // Use up the flags (512; flags are never given back): later threads share
    // a counter.
    std::vector<std::thread> many;
    std::atomic<int> done{0};
    for (int i = 0; i < 600; ++i)
        many.emplace_back([&] {
            ReportGuard guard;
            ++done;
        });
    for (auto& t : many) t.join();
    EXPECT_EQ(done.load(), 600);
    check(1);                              // a thread on the shared counter
    ReportingThreads::waitForReporters();  // returns: nobody is inside
}

// CPU runs record through the CPU allocator wrapper, one capture at a time; a
// second capture meanwhile, and CUDA runs, use c10's memory reports.
TEST(CaptureScope, CpuRunsWrapTheAllocatorOneAtATime) {
    const std::string path = scratchTrace("ledger-capture");
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger first(**writer), second(**writer);
        {
            CaptureScope a(first, CaptureOptions{});
            EXPECT_TRUE(a.wrapsCpuAllocator());
            CaptureScope b(second, CaptureOptions{});
            EXPECT_FALSE(b.wrapsCpuAllocator());
        }
        {
            CaptureScope cuda(first, CaptureOptions{false, false});
            EXPECT_FALSE(cuda.wrapsCpuAllocator());
        }
        CaptureScope again(second, CaptureOptions{});  // the first one let go
        EXPECT_TRUE(again.wrapsCpuAllocator());
    }
    std::filesystem::remove(path);
}

// A tick/nanosecond pair read while the thread was preempted between its
// reads is left out: of the tries, the one whose tick reads are closest
// gives the pair, at their midpoint. Taking the first read here would put
// the pair 50,000 ns late, and every record converted against it with it.
TEST(TickPair, ThePreemptedReadIsLeftOut) {
    // Ticks advance 10 per read; the first try is preempted for 50,000 ns
    // between its tick reads, the others are not.
    uint64_t ticks = 1000;
    int64_t ns = 0;
    int reads = 0;
    auto tick = [&] {
        const uint64_t t = ticks;
        ticks += 10;
        return t;
    };
    auto now = [&] {
        ++reads;
        const bool preempted = reads == 1;
        if (preempted) ticks += 50'000;
        ns = int64_t(ticks);  // 1 ns per tick, read after any preemption
        return ns;
    };
    const TickPair p = readTickPair(tick, now, 4);
    EXPECT_EQ(reads, 4);
    // The chosen pair's ns is within its bracket of the true time of its ticks.
    EXPECT_LE(std::llabs(p.ns - int64_t(p.ticks)), 10);
    // A single try takes the preempted read: 25,000 ns off at its midpoint.
    ticks = 1000;
    reads = 0;
    const TickPair first = readTickPair(tick, now, 1);
    EXPECT_GT(std::llabs(first.ns - int64_t(first.ticks)), 20'000);
}

TEST(TickPair, ATickClockThatStepsBackIsNotTaken) {
    // The counter steps back between two reads (another core's counter, after
    // a migration): that try has no width to trust.
    std::vector<uint64_t> seq{500, 400, 1000, 1004};
    size_t at = 0;
    auto tick = [&] { return seq[at++]; };
    auto now = [&] { return int64_t(777); };
    const TickPair p = readTickPair(tick, now, 2);
    EXPECT_EQ(p.ticks, 1002u);
    EXPECT_EQ(p.ns, 777);
    // With no try that read forward, one plain read.
    seq = {500, 400, 900};
    at = 0;
    const TickPair plain = readTickPair(tick, now, 1);
    EXPECT_EQ(plain.ticks, 900u);
    EXPECT_EQ(plain.ns, 777);
}
