#include "memscope/open/plugin_registry.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace memscope;

namespace {

class MagicImporter final : public Importer {
public:
    MagicImporter(std::string id, std::string magic, int score)
        : id_(std::move(id)), magic_(std::move(magic)), score_(score) {}
    std::string id() const override { return id_; }
    std::string description() const override { return "test"; }
    std::vector<std::string> extensions() const override { return {".t"}; }
    int probe(std::span<const std::byte> head, std::string_view) const override {
        return head.size() >= magic_.size() &&
                       std::memcmp(head.data(), magic_.data(), magic_.size()) == 0
                   ? score_
                   : 0;
    }
    Result<Trace> import(const std::string& path, const TaskContext&) const override {
        if (path.find("broken") != std::string::npos) return makeError("chunk 3 is damaged");
        Trace t;
        t.metadata.name = id_;
        return t;
    }

private:
    std::string id_, magic_;
    int score_;
};

class NullExporter final : public Exporter {
public:
    std::string id() const override { return "null"; }
    std::string description() const override { return "writes nothing"; }
    std::string extension() const override { return ".null"; }
    Result<void> exportTrace(const Trace&, const std::string&, const TaskContext&) const override {
        return {};
    }
};

std::filesystem::path writeFile(const std::string& name, const std::string& content) {
    const auto path = std::filesystem::temp_directory_path() / ("memscope_registry_" + name);
    std::ofstream(path, std::ios::binary) << content;
    return path;
}

}  // namespace

TEST(PluginRegistry, ProbesPicksTheMostConfidentImporter) {
    PluginRegistry r;
    r.addImporter(std::make_unique<MagicImporter>("weak", "AB", 10));
    r.addImporter(std::make_unique<MagicImporter>("strong", "ABC", 100));
    auto t = r.load(writeFile("abc.t", "ABCDEF").string());
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_EQ(t->metadata.name, "strong");
    EXPECT_EQ(t->metadata.source_format, "strong");
    const Importer* used = nullptr;
    auto weak = r.load(writeFile("abx.t", "ABXDEF").string(), {}, &used);
    ASSERT_TRUE(weak.ok());
    EXPECT_EQ(weak->metadata.name, "weak");
    ASSERT_NE(used, nullptr);
    EXPECT_EQ(used->id(), "weak");
}

TEST(PluginRegistry, ErrorsNameTheFile) {
    PluginRegistry r;
    r.addImporter(std::make_unique<MagicImporter>("x", "X", 50));
    const auto unknown = writeFile("unknown.bin", "zzz").string();
    auto a = r.load(unknown);
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.message().find(unknown), std::string::npos);
    EXPECT_NE(a.message().find("tried: x"), std::string::npos);
    auto b = r.load("/nonexistent/trace.memscope");
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.message().find("/nonexistent/trace.memscope"), std::string::npos);
    auto c = r.load(writeFile("empty", "").string());
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.message().find("empty"), std::string::npos);
    const auto broken = writeFile("broken.t", "X123").string();
    auto d = r.load(broken);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.message(), broken + ": chunk 3 is damaged");
    EXPECT_FALSE(r.load(std::filesystem::temp_directory_path().string()).ok());
}

TEST(PluginRegistry, SameIdReplacesAndExportersMatchExtensions) {
    PluginRegistry r;
    r.addImporter(std::make_unique<MagicImporter>("x", "X", 50));
    r.addImporter(std::make_unique<MagicImporter>("x", "Y", 50));
    EXPECT_EQ(r.importers().size(), 1u);
    r.addExporter(std::make_unique<NullExporter>());
    EXPECT_NE(r.exporter("null"), nullptr);
    EXPECT_TRUE(r.exporterForPath("/tmp/out.null").ok());
    auto bad = r.exporterForPath("/tmp/out.weird");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.message().find("null (.null)"), std::string::npos);
}

TEST(PluginRegistry, LoadsAPluginLibraryFromAFolder) {
    PluginRegistry r;
    const PluginLoadReport report = r.loadFolder(MEMSCOPE_TEST_PLUGIN_DIR);
    ASSERT_EQ(report.errors.size(), 0u) << report.errors.front();
    ASSERT_EQ(report.loaded.size(), 1u);
    ASSERT_NE(r.importer("test-greeting"), nullptr);
    auto t = r.load(writeFile("hi.hello", "HELLO world").string());
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_EQ(t->metadata.name, "greeting");
    EXPECT_EQ(t->events.size(), 1u);
}

TEST(PluginRegistry, RefusesLibrariesThatAreNotPlugins) {
    PluginRegistry r;
    const auto dir = std::filesystem::temp_directory_path() / "memscope_bad_plugins";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "garbage.so") << "not an ELF file";
    const PluginLoadReport report = r.loadFolder(dir);
    EXPECT_TRUE(report.loaded.empty());
    ASSERT_EQ(report.errors.size(), 1u);
    EXPECT_NE(report.errors[0].find("garbage.so"), std::string::npos);
    auto libc = r.loadLibrary("libm.so.6");  // a real library without our symbols
    ASSERT_FALSE(libc.ok());
    EXPECT_NE(libc.message().find("not a memscope plugin"), std::string::npos);
    EXPECT_TRUE(r.loadFolder("/nonexistent/plugins").errors.empty());
}
