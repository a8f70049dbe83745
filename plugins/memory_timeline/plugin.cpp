// Registers the torch.profiler memory-timeline importer.
#include <memory>

#include "memscope/plugins/memory_timeline.h"

namespace memscope {
namespace {

class MemoryTimelineImporter final : public Importer {
public:
    std::string id() const override { return std::string(memory_timeline::kId); }
    std::string description() const override {
        return "torch.profiler memory timeline (export_memory_timeline .raw.json.gz / .json)";
    }
    std::vector<std::string> extensions() const override {
        return {".raw.json.gz", ".json", ".json.gz"};
    }
    int probe(std::span<const std::byte> head, std::string_view path) const override {
        return memory_timeline::probe(head, path);
    }
    Result<Trace> import(const std::string& path, const TaskContext& ctx) const override {
        return memory_timeline::importFile(path, ctx);
    }
};

}  // namespace

void registerMemoryTimelinePlugins(PluginRegistry& registry) {
    registry.addImporter(std::make_unique<MemoryTimelineImporter>());
}

}  // namespace memscope
