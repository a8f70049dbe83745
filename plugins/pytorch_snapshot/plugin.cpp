// Registers the snapshot importers (pickles, MemoryViz HTML pages) and the
// exporter with the registry.
#include <memory>

#include "memscope/plugins/pytorch_snapshot.h"

namespace memscope {
namespace {

class SnapshotImporter final : public Importer {
public:
    std::string id() const override { return std::string(pytorch_snapshot::kId); }
    std::string description() const override {
        return "PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot)";
    }
    std::vector<std::string> extensions() const override { return {".pickle", ".pkl"}; }
    int probe(std::span<const std::byte> head, std::string_view path) const override {
        return pytorch_snapshot::probe(head, path);
    }
    Result<Trace> import(const std::string& path, const TaskContext& ctx) const override {
        return pytorch_snapshot::importFile(path, ctx);
    }
};

class HtmlImporter final : public Importer {
public:
    std::string id() const override { return std::string(pytorch_snapshot::kHtmlId); }
    std::string description() const override {
        return "MemoryViz HTML page (torch.cuda._memory_viz trace_plot / segment_plot)";
    }
    std::vector<std::string> extensions() const override { return {".html", ".htm"}; }
    int probe(std::span<const std::byte> head, std::string_view path) const override {
        return pytorch_snapshot::probeHtml(head, path);
    }
    Result<Trace> import(const std::string& path, const TaskContext& ctx) const override {
        return pytorch_snapshot::importHtmlFile(path, ctx);
    }
};

class SnapshotExporter final : public Exporter {
public:
    std::string id() const override { return std::string(pytorch_snapshot::kId); }
    std::string description() const override {
        return "PyTorch CUDA memory snapshot pickle (opens in memory_viz)";
    }
    std::string extension() const override { return ".pickle"; }
    Result<void> exportTrace(const Trace& trace, const std::string& path,
                             const TaskContext& ctx) const override {
        return pytorch_snapshot::exportFile(trace, path, ctx);
    }
};

}  // namespace

void registerPytorchSnapshotPlugins(PluginRegistry& registry) {
    registry.addImporter(std::make_unique<SnapshotImporter>());
    registry.addImporter(std::make_unique<HtmlImporter>());
    registry.addExporter(std::make_unique<SnapshotExporter>());
}

}  // namespace memscope
