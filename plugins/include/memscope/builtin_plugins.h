#pragma once
#include "memscope/plugin_registry.h"

namespace memscope {

// Registers every importer and exporter built into memscope.
void registerBuiltinPlugins(PluginRegistry& registry);

// Built-ins plus the plugin folders; problems loading a folder's libraries are
// returned for the front end to show (they never stop it).
PluginLoadReport registerAllPlugins(PluginRegistry& registry);

}  // namespace memscope
