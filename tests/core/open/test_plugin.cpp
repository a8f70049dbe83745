// A plugin built as its own shared library, exactly as a third party would, and
// loaded by the registry test from a folder.
#include <cstring>
#include <memory>

#include "memscope/open/plugin.h"
#include "memscope/open/plugin_registry.h"

namespace {

class GreetingImporter final : public memscope::Importer {
public:
    std::string id() const override { return "test-greeting"; }
    std::string description() const override { return "test files starting with HELLO"; }
    std::vector<std::string> extensions() const override { return {".hello"}; }
    int probe(std::span<const std::byte> head, std::string_view) const override {
        return head.size() >= 5 && std::memcmp(head.data(), "HELLO", 5) == 0 ? 90 : 0;
    }
    memscope::Result<memscope::Trace> import(const std::string&,
                                             const memscope::TaskContext&) const override {
        memscope::Trace trace;
        trace.metadata.name = "greeting";
        trace.events.push_back(memscope::Event{
            1000, 0x10, 64, {}, {}, 0, 0, memscope::EventKind::Alloc, memscope::Category::Input});
        return trace;
    }
};

}  // namespace

extern "C" int memscope_plugin_abi_version() {
    return memscope::kPluginAbiVersion;
}
extern "C" void memscope_register_plugins(memscope::PluginRegistry* registry) {
    registry->addImporter(std::make_unique<GreetingImporter>());
}
