#pragma once
// Helpers shared by the CLI's commands: a registry with every plugin, loading
// with progress on stderr, and human-readable byte counts.

#include <cstdint>
#include <string>

#include "memscope/plugin_registry.h"

namespace memscope::cli {

// The built-in plugins plus the plugin folders; problems loading the folders
// are printed to stderr once.
const PluginRegistry& registry();

// Loads a file with progress on stderr when it is a terminal and the file is big.
// `used` receives the importer that read the file.
Result<Trace> loadWithProgress(const std::string& path, const Importer** used = nullptr);

std::string formatBytes(int64_t bytes);  // "1.50 GiB"

}  // namespace memscope::cli
