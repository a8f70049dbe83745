// The background trace writer: many producer threads, phase batches, and a
// writing process that is killed or forks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "native_test_util.h"

using namespace memscope;
using namespace memscope::native_test;

TEST(BackgroundTraceWriter, ManyThreads) {
    TempDir dir;
    TraceMetadata meta;
    meta.name = "threads";
    auto created = BackgroundTraceWriter::create(dir.file("bg"), meta, {.events_per_chunk = 1000},
                                                 std::chrono::milliseconds(5));
    ASSERT_TRUE(created) << created.message();
    BackgroundTraceWriter& w = **created;
    constexpr int kThreads = 4;
    constexpr int kEvents = 20000;
    std::vector<std::vector<StackId>> stacks(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEvents; ++i) {
                if (i % 1000 == 0) {
                    // Shared and per-thread names, interned concurrently.
                    const StringId file = w.internString("shared.py");
                    const StringId fn =
                        w.internString("t" + std::to_string(t) + "_" + std::to_string(i));
                    const FrameId frame = w.internFrame({fn, file, uint32_t(i)});
                    const FrameId shared = w.internFrame({file, file, 1});
                    const std::vector<FrameId> s{frame, shared};
                    stacks[t].push_back(w.internStack(s));
                    w.internStream(uint64_t(t + 1));
                }
                if (i % 5000 == 4999) {
                    ASSERT_TRUE(w.flush());
                }
                // Address: thread and sequence, to check order per thread.
                w.append(makeEvent(i, EventKind::Alloc, uint64_t(t) << 32 | uint64_t(i), 512,
                                   Category::Temporary)
                             .stack(stacks[t].back())
                             .device(int16_t(t)));
            }
        });
    }
    for (auto& th : threads) th.join();
    w.setProperty("done", "yes");
    ASSERT_TRUE(w.close());
    ASSERT_TRUE(w.close());

    auto trace = readNativeTrace(dir.file("bg"));
    ASSERT_TRUE(trace) << trace.message();
    ASSERT_EQ(trace->events.size(), size_t(kThreads * kEvents));
    std::vector<uint64_t> next(kThreads, 0);
    for (const Event& e : trace->events) {
        const auto t = size_t(e.address >> 32);
        ASSERT_LT(t, size_t(kThreads));
        ASSERT_EQ(e.address & 0xffffffff, next[t]);
        const StackId expected = stacks[t][next[t] / 1000];
        ASSERT_EQ(e.stack, expected);
        ++next[t];
    }
    // Ids handed out while other threads interned resolve to what was interned.
    const auto frames = trace->stack(stacks[2][7]);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(trace->string(trace->frame(frames[0]).function), "t2_7000");
    EXPECT_EQ(trace->streams.size(), size_t(kThreads + 1));
    ASSERT_NE(trace->metadata.property("done"), nullptr);
}

// A producer that numbers its phases itself hands them over in batches: ids,
// names, parents and ends come out as if added one by one; a batch whose first
// id is not the writer's next (someone else added phases) is refused whole.
TEST(BackgroundTraceWriter, PhaseBatchesKeepTheProducersIds) {
    TempDir dir;
    auto created = BackgroundTraceWriter::create(dir.file("phases"), TraceMetadata{});
    ASSERT_TRUE(created) << created.message();
    BackgroundTraceWriter& w = **created;
    const PhaseId first = w.nextPhaseId();
    ASSERT_EQ(first.value, 1u);
    Phase step;
    step.kind = PhaseKind::Step;
    step.step = 0;
    step.start = 10;
    step.end = 10;
    Phase forward = step;
    forward.kind = PhaseKind::Forward;
    forward.parent = first;
    forward.start = 11;
    forward.end = 15;
    const std::vector<Phase> batch{step, forward};
    const std::vector<std::string> names{"step 0", "step 0 / forward"};
    EXPECT_FALSE(w.addPhases(PhaseId(2), batch, names));                 // not the next id
    EXPECT_FALSE(w.addPhases(first, batch, std::span(names).first(1)));  // lengths differ
    ASSERT_TRUE(w.addPhases(first, batch, names));
    EXPECT_EQ(w.nextPhaseId().value, 3u);
    const std::vector<std::pair<PhaseId, int64_t>> ends{{first, 20}};
    w.endPhases(ends);
    EXPECT_FALSE(w.addPhases(first, batch, names));  // taken now
    ASSERT_TRUE(w.close());

    auto trace = readNativeTrace(dir.file("phases"));
    ASSERT_TRUE(trace) << trace.message();
    ASSERT_EQ(trace->phases.size(), 2u);
    EXPECT_EQ(trace->string(trace->phases[0].name), "step 0");
    EXPECT_EQ(trace->phases[0].end, 20);
    EXPECT_EQ(trace->string(trace->phases[1].name), "step 0 / forward");
    EXPECT_EQ(trace->phases[1].parent, first);
    EXPECT_EQ(trace->phases[1].kind, PhaseKind::Forward);
    EXPECT_EQ(trace->phases[1].end, 15);
}

namespace {

Event forkEvent(uint64_t i) {
    return makeEvent(int64_t(i) * 10, i % 2 ? EventKind::FreeCompleted : EventKind::Alloc,
                     0x1000 + (i / 2) * 512, 512 * (1 + i % 7), Category::Activation);
}

// Waits up to `seconds` for `pid`; kills it and returns false if it hangs.
bool waitForChild(pid_t pid, int seconds, int* status) {
    for (int i = 0; i < seconds * 100; ++i) {
        if (::waitpid(pid, status, WNOHANG) == pid) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, status, 0);
    return false;
}

}  // namespace

TEST(BackgroundTraceWriter, ChildKilledMidRunLeavesALoadableFile) {
    TempDir dir;
    const std::string path = dir.file("killed.memscope");
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(fds[0]);
        auto w = BackgroundTraceWriter::create(path, TraceMetadata{}, {.events_per_chunk = 4096},
                                               std::chrono::milliseconds(20));
        if (!w) ::_exit(3);
        for (uint64_t i = 0;; ++i) {
            (*w)->append(forkEvent(i));
            if (i % 20000 == 19999) {
                if (!(*w)->flush()) ::_exit(4);
                const uint64_t flushed = i + 1;
                if (::write(fds[1], &flushed, sizeof flushed) != sizeof flushed) ::_exit(5);
            }
        }
    }
    ::close(fds[1]);
    uint64_t flushed = 0;
    for (int reports = 0; reports < 5; ++reports)
        ASSERT_EQ(::read(fds[0], &flushed, sizeof flushed), ssize_t(sizeof flushed));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

    NativeReadReport report;
    auto trace = readNativeTrace(path, {}, &report);
    ASSERT_TRUE(trace) << trace.message();
    ASSERT_GE(trace->events.size(), flushed);
    for (size_t i = 0; i < trace->events.size(); ++i) {
        const Event want = forkEvent(i);
        ASSERT_EQ(trace->events[i].address, want.address) << i;
        ASSERT_EQ(trace->events[i].size, want.size) << i;
        ASSERT_EQ(trace->events[i].time, want.time) << i;
    }
}

TEST(BackgroundTraceWriter, ForkWhileWritingDoesNotDeadlockTheChild) {
    TempDir dir;
    auto created =
        BackgroundTraceWriter::create(dir.file("parent"), TraceMetadata{},
                                      {.events_per_chunk = 256}, std::chrono::milliseconds(1));
    ASSERT_TRUE(created);
    BackgroundTraceWriter* w = created->get();
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> appended{0};
    std::thread producer([&] {
        // Bursts with pauses: a producer at full speed would make every fork
        // copy a large, fast-growing process.
        for (uint64_t i = 0; !stop; ++i) {
            w->append(forkEvent(i));
            w->internString("s" + std::to_string(i % 1000));
            appended = i + 1;
            if (i % 64 == 63) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    });
    for (int round = 0; round < 20; ++round) {
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            // The child's copy: usable, writes nothing, and goes away quietly.
            w->internString("child");
            w->append(forkEvent(0));
            const bool flush_refused = !w->flush();
            created->reset();
            ::_exit(flush_refused ? 0 : 7);
        }
        int status = 0;
        ASSERT_TRUE(waitForChild(pid, 20, &status)) << "the forked child hung";
        ASSERT_TRUE(WIFEXITED(status)) << status;
        ASSERT_EQ(WEXITSTATUS(status), 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stop = true;
    producer.join();
    ASSERT_TRUE(w->close());
    auto trace = readNativeTrace(dir.file("parent"));
    ASSERT_TRUE(trace) << trace.message();
    EXPECT_EQ(trace->events.size(), appended.load());
}
