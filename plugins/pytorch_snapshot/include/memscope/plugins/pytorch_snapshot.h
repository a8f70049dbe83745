#pragma once
// PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot pickles):
// import into a Trace and export a Trace back as a snapshot memory_viz opens.
// The registry is the usual entry point; these functions are for tests,
// fuzzers and tools that hold bytes in memory.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "memscope/open/plugin.h"
#include "memscope/open/plugin_registry.h"

namespace memscope {

void registerPytorchSnapshotPlugins(PluginRegistry& registry);

namespace pytorch_snapshot {

inline constexpr std::string_view kId = "pytorch-snapshot";
// Top-level key the exporter adds when the Trace had no allocator end state.
inline constexpr std::string_view kNoAllocatorStateKey = "memscope_no_allocator_state";
// TraceMetadata property: how many lists the snapshot's 'device_traces' had,
// empty ones included, so that the export writes as many and memory_viz
// offers every device again.
inline constexpr std::string_view kDeviceCountKey = "pytorch.device_traces";

// 0..100 as Importer::probe.
int probe(std::span<const std::byte> head, std::string_view path);

// `name` becomes TraceMetadata::name.
Result<Trace> importBytes(std::span<const std::byte> bytes, const TaskContext& ctx = {},
                          std::string name = {});
Result<Trace> importFile(const std::string& path, const TaskContext& ctx = {});

// Protocol 4, the opcodes memory_viz's own unpickler reads.
Result<void> exportFile(const Trace& trace, const std::string& path, const TaskContext& ctx = {});

}  // namespace pytorch_snapshot
}  // namespace memscope
