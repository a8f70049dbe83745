#pragma once
// Kineto chrome traces (torch.profiler(profile_memory=True).export_chrome_trace):
// the "[memory]" instant events become tensor-level alloc/free events.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "memscope/open/plugin.h"
#include "memscope/open/plugin_registry.h"

namespace memscope {

void registerKinetoPlugins(PluginRegistry& registry);

namespace kineto {

inline constexpr std::string_view kId = "kineto";

int probe(std::span<const std::byte> head, std::string_view path);
// .json or .json.gz (detected by the gzip magic), from a file or from memory.
Result<Trace> importFile(const std::string& path, const TaskContext& ctx = {});
Result<Trace> importBytes(std::span<const std::byte> bytes, const TaskContext& ctx = {},
                          std::string name = {});

}  // namespace kineto
}  // namespace memscope
