#pragma once
// torch.profiler's export_memory_timeline files: the raw event list
// (.raw.json.gz: [t_ns, action, bytes, category]) and the coalesced curve
// (.json / .json.gz: [times_us, sizes per category]). Both become a
// categorized timeline on one device.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "memscope/open/plugin.h"
#include "memscope/open/plugin_registry.h"

namespace memscope {

void registerMemoryTimelinePlugins(PluginRegistry& registry);

namespace memory_timeline {

inline constexpr std::string_view kId = "memory-timeline";

int probe(std::span<const std::byte> head, std::string_view path);
Result<Trace> importFile(const std::string& path, const TaskContext& ctx = {});
Result<Trace> importBytes(std::span<const std::byte> bytes, const TaskContext& ctx = {},
                          std::string name = {});

}  // namespace memory_timeline
}  // namespace memscope
