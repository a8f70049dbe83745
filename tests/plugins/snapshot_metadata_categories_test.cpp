// Labels PyTorch or a framework wrote into a snapshot (user_metadata, the
// annotate action) are categories recorded by the producer, used before any
// inference rule; free text labels nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "memscope/plugins/pytorch_snapshot.h"
#include "memscope_test/event_builder.h"
#include "metadata_categories.h"

namespace memscope::pytorch_snapshot {
namespace {

namespace fs = std::filesystem;
using testsupport::makeEvent;

TEST(MetadataCategories, WholeNamesAndJsonNameACategory) {
    EXPECT_EQ(categoryFromMetadata("gradient"), Category::Gradient);
    EXPECT_EQ(categoryFromMetadata("  Optimizer State "), Category::OptimizerState);
    EXPECT_EQ(categoryFromMetadata("optimizer-state"), Category::OptimizerState);
    EXPECT_EQ(categoryFromMetadata("weights"), Category::Parameter);
    EXPECT_EQ(categoryFromMetadata(R"({"category":"activation","layer":3})"), Category::Activation);
    EXPECT_EQ(categoryFromMetadata(R"({"memscope_category":"input"})"), Category::Input);
    // Free text, other keys, bad JSON and huge strings name nothing.
    EXPECT_EQ(categoryFromMetadata("forward of block 3"), std::nullopt);
    EXPECT_EQ(categoryFromMetadata("gradient checkpointing"), std::nullopt);
    EXPECT_EQ(categoryFromMetadata(R"({"phase":"gradient"})"), std::nullopt);
    EXPECT_EQ(categoryFromMetadata(R"({"category":7})"), std::nullopt);
    EXPECT_EQ(categoryFromMetadata("{not json"), std::nullopt);
    EXPECT_EQ(categoryFromMetadata(std::string(100000, 'a')), std::nullopt);
    EXPECT_EQ(categoryFromMetadata(""), std::nullopt);
}

TEST(MetadataCategories, ASnapshotsLabelsAreRecordedCategories) {
    Trace t;
    t.metadata.time_base = TimeBase::Nanoseconds;
    auto add = [&](EventKind kind, uint64_t address, std::string_view metadata = {}) {
        const int64_t time = 1'700'000'000'000'000'000 + int64_t(t.events.size()) * 1000;
        t.events.push_back(makeEvent(time, kind, address, 4096));
        if (!metadata.empty())
            t.attributes.push_back(EventAttribute{
                t.events.size() - 1, t.internString("user_metadata"), t.internString(metadata)});
    };
    add(EventKind::Alloc, 0x1000, "gradient");
    add(EventKind::Alloc, 0x2000, R"({"category":"optimizer_state","step":3})");
    add(EventKind::Alloc, 0x3000, "forward of block 3");
    add(EventKind::Alloc, 0x4000);
    add(EventKind::Marker, 0x4000, "parameter");  // _annotate_memory after the fact
    add(EventKind::Marker, 0x9000, "parameter");  // at an address nothing holds
    for (uint64_t a : {0x1000, 0x2000, 0x3000, 0x4000}) add(EventKind::FreeCompleted, a);
    const fs::path file =
        fs::temp_directory_path() / ("memscope-metadata-" + std::to_string(::getpid()) + ".pickle");
    ASSERT_TRUE(exportFile(t, file.string()).ok());
    auto back = importFile(file.string());
    fs::remove(file);
    ASSERT_TRUE(back.ok()) << back.message();
    std::vector<Category> allocs;
    for (const Event& e : back->events)
        if (e.kind == EventKind::Alloc) allocs.push_back(e.category);
    ASSERT_EQ(allocs.size(), 4u);
    EXPECT_EQ(allocs[0], Category::Gradient);
    EXPECT_EQ(allocs[1], Category::OptimizerState);
    EXPECT_EQ(allocs[2], Category::Unknown);  // left to inference
    EXPECT_EQ(allocs[3], Category::Parameter);
}

}  // namespace
}  // namespace memscope::pytorch_snapshot
