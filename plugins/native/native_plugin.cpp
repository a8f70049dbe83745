// Registers the native format's importer and exporter with the registry
// (called from the generated builtin_plugins.cpp).
#include "native_plugin.h"

#include "memscope/open/plugin_registry.h"

namespace memscope {

void registerNativePlugins(PluginRegistry& registry) {
    registry.addImporter(makeNativeImporter());
    registry.addExporter(makeNativeExporter());
}

}  // namespace memscope
