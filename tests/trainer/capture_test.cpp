// The CPU allocator wrapper end to end, through c10's own allocator: the
// owner's route and the general path both record, and a scope's end waits
// for reports in flight on either, from whichever thread it ends on.

#include "capture.h"

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "ledger.h"
#include "memscope/format/native_format.h"
#include "test_util.h"

using namespace memscope;
using namespace memscope::trainer;
using memscope::trainer::test::scratchTrace;

namespace {

c10::DataPtr allocateCpu(size_t n) {
    return c10::GetAllocator(c10::DeviceType::CPU)->allocate(n);
}

}  // namespace

// The owner (this thread) reports by its route, another thread by the
// general path, into the same ledger; frees match across them. After the
// scope, nothing more arrives, not even the free of memory it saw allocated.
TEST(CaptureScope, OwnerAndOtherThreadsRecordUntilTheScopeEnds) {
    const std::string path = scratchTrace("capture-threads");
    constexpr int kEach = 500;
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        std::vector<c10::DataPtr> outliving;
        {
            CaptureScope scope(ledger, CaptureOptions{});
            ASSERT_TRUE(scope.wrapsCpuAllocator());
            for (int i = 0; i < kEach; ++i) (void)allocateCpu(64 + static_cast<size_t>(i));
            std::vector<c10::DataPtr> from_other;  // allocated there, freed here
            std::thread other([&] {
                for (int i = 0; i < kEach; ++i) (void)allocateCpu(32);
                for (int i = 0; i < 10; ++i) from_other.push_back(allocateCpu(48));
            });
            other.join();
            from_other.clear();
            outliving.push_back(allocateCpu(4096));
            ledger.commit();
        }
        outliving.clear();  // its free comes after the scope: not recorded
        (void)allocateCpu(128);
        const auto counts = ledger.counts();
        EXPECT_EQ(counts.allocs, 2u * kEach + 10 + 1);
        EXPECT_EQ(counts.frees, 2u * kEach + 10);
        EXPECT_EQ(counts.unmatched_frees, 0u);
        ASSERT_TRUE((*writer)->close().ok());
    }
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    ASSERT_EQ(trace->events.size(), 4u * kEach + 21);
    // The owner's first allocation, with the size it asked for.
    EXPECT_EQ(trace->events[0].kind, EventKind::Alloc);
    EXPECT_EQ(trace->events[0].size, 64u);
    EXPECT_EQ(trace->events[1].kind, EventKind::FreeCompleted);
    EXPECT_EQ(trace->events[1].size, 64u);  // the free's size, from its allocation
    std::filesystem::remove(path);
}

// A scope that ends on another thread than the one that made it (and owns
// the ledger) while that thread keeps allocating: once the end returns, no
// report touches the ledger, which is destroyed at once (ASan would see a
// report that still did). The making thread outlives the scope, as it must.
TEST(CaptureScope, EndingOnAnotherThreadWaitsForTheOwnersReports) {
    const std::string path = scratchTrace("capture-end");
    auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
    ASSERT_TRUE(writer.ok()) << writer.message();
    std::unique_ptr<AllocationLedger> ledger;
    std::unique_ptr<CaptureScope> scope;
    std::atomic<int> stage{0};  // 1: recording, 2: scope and ledger gone, 3: stop
    std::atomic<uint64_t> reports{0};
    std::thread owner([&] {
        ledger = std::make_unique<AllocationLedger>(**writer);
        scope = std::make_unique<CaptureScope>(*ledger, CaptureOptions{});
        stage.store(1);
        while (stage.load() < 3) {
            (void)allocateCpu(256);
            reports.fetch_add(2, std::memory_order_relaxed);
        }
    });
    while (stage.load() < 1) std::this_thread::yield();
    ASSERT_TRUE(scope->wrapsCpuAllocator());
    while (reports.load() < 2000) std::this_thread::yield();
    scope.reset();  // from this thread, while the owner allocates
    const auto counts = ledger->counts();
    EXPECT_GE(counts.allocs, 1000u);
    // The last allocation's free may have come after the end.
    EXPECT_LE(counts.allocs - counts.frees, 1u);
    EXPECT_GE(counts.allocs, counts.frees);
    ledger.reset();
    const uint64_t at_end = reports.load();
    while (reports.load() < at_end + 2000) std::this_thread::yield();  // unrecorded now
    stage.store(3);
    owner.join();
    ASSERT_TRUE((*writer)->close().ok());
    std::filesystem::remove(path);
}
