// The ledger's categorization rules on hand-made allocation sequences, read
// back through core's native reader.

#include "ledger.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "capture.h"
#include "memscope/native_format.h"

using namespace memscope;
using namespace memscope::trainer;

namespace {

std::string tempPath(const char* name) {
    return (std::filesystem::temp_directory_path() /
            (std::string("memscope-ledger-") + name + ".memscope"))
        .string();
}

}  // namespace

TEST(AllocationLedger, CategoriesFromTagsAndHindsight) {
    const std::string path = tempPath("categories");
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

// The hook's side is lock-free: four threads report at once while the
// trainer's thread reads; every event arrives once, frees match their
// allocations, and after a commit has sized the log the hook allocates nothing.
TEST(AllocationLedger, ConcurrentReportsAndNoAllocationInTheHook) {
    const std::string path = tempPath("concurrent");
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger ledger(**writer);
        constexpr int kThreads = 4, kPairs = 20000;
        auto report = [&](int t) {
            for (int i = 0; i < kPairs; ++i) {
                const uint64_t ptr = (static_cast<uint64_t>(t + 1) << 32) + uint64_t(i) * 64;
                ledger.onAlloc(ptr, 64, 0, i);
                ledger.onFree(ptr, 64, 0, i + 1);
            }
        };
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) threads.emplace_back(report, t);
        for (int k = 0; k < 100; ++k) (void)ledger.mark();  // reads while they write
        for (auto& t : threads) t.join();
        ledger.commit();
        auto c = ledger.counts();
        EXPECT_EQ(c.allocs, uint64_t{kThreads} * kPairs);
        EXPECT_EQ(c.frees, uint64_t{kThreads} * kPairs);
        EXPECT_EQ(c.unmatched_frees, 0u);
        // The commit reserved twice this step: a step as busy allocates nothing.
        const uint64_t before = c.hook_allocations;
        report(0);
        ledger.commit();
        EXPECT_EQ(ledger.counts().hook_allocations, before);
        ASSERT_TRUE((*writer)->close().ok());
    }
    auto trace = readNativeTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.message();
    EXPECT_EQ(trace->events.size(), 2u * 5 * 20000);
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

// CPU runs record through the CPU allocator wrapper, one capture at a time; a
// second capture meanwhile, and CUDA runs, use c10's memory reports.
TEST(CaptureScope, CpuRunsWrapTheAllocatorOneAtATime) {
    const std::string path = tempPath("capture");
    {
        auto writer = BackgroundTraceWriter::create(path, TraceMetadata{});
        ASSERT_TRUE(writer.ok()) << writer.message();
        AllocationLedger first(**writer), second(**writer);
        const EpochClock clock;
        {
            CaptureScope a(first, clock, CaptureOptions{});
            EXPECT_TRUE(a.wrapsCpuAllocator());
            CaptureScope b(second, clock, CaptureOptions{});
            EXPECT_FALSE(b.wrapsCpuAllocator());
        }
        {
            CaptureScope cuda(first, clock, CaptureOptions{false, false});
            EXPECT_FALSE(cuda.wrapsCpuAllocator());
        }
        CaptureScope again(second, clock, CaptureOptions{});  // the first one let go
        EXPECT_TRUE(again.wrapsCpuAllocator());
    }
    std::filesystem::remove(path);
}
