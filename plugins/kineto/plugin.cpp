// Registers the kineto chrome-trace importer.
#include <memory>

#include "memscope/plugins/kineto.h"

namespace memscope {
namespace {

class KinetoImporter final : public Importer {
public:
    std::string id() const override { return std::string(kineto::kId); }
    std::string description() const override {
        return "Kineto chrome trace with [memory] events (torch.profiler export_chrome_trace)";
    }
    std::vector<std::string> extensions() const override { return {".json", ".json.gz"}; }
    int probe(std::span<const std::byte> head, std::string_view path) const override {
        return kineto::probe(head, path);
    }
    Result<Trace> import(const std::string& path, const TaskContext& ctx) const override {
        return kineto::importFile(path, ctx);
    }
};

}  // namespace

void registerKinetoPlugins(PluginRegistry& registry) {
    registry.addImporter(std::make_unique<KinetoImporter>());
}

}  // namespace memscope
