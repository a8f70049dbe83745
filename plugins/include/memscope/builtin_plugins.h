#pragma once
#include "memscope/open/plugin_registry.h"

namespace memscope {

// Registers every importer and exporter built into memscope.
void registerBuiltinPlugins(PluginRegistry& registry);

// Built-ins plus the plugin folders; problems loading a folder's libraries are
// returned for the front end to show (they never stop it).
PluginLoadReport registerAllPlugins(PluginRegistry& registry);

// The process's one registry (built-ins and plugin folders), built on first
// use and kept for the process (plugins may be dlopen'ed), and the one report
// of what its plugin folders held: every front end opens files through these.
const PluginRegistry& processRegistry();
const PluginLoadReport& processPluginReport();

}  // namespace memscope
