#pragma once
// PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot pickles):
// import into a Trace and export a Trace back as a snapshot memory_viz opens.
// Also the MemoryViz HTML pages torch.cuda._memory_viz's trace_plot and
// segment_plot write, which embed the snapshot pickle as base64.
// The registry is the usual entry point; these functions are for tests,
// fuzzers and tools that hold bytes in memory.

#include <cstddef>
#include <cstdint>
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

// The importer of MemoryViz HTML pages, and the properties it adds to what
// the embedded snapshot gives: where the trace came from ("memory_viz html
// page") and the view the page opens with ("Active Memory Timeline").
inline constexpr std::string_view kHtmlId = "pytorch-memory-viz-html";
inline constexpr std::string_view kHtmlContainerKey = "pytorch.container";
inline constexpr std::string_view kHtmlViewKey = "pytorch.memory_viz_view";

struct HtmlLimits {
    // The decoded snapshot is held in memory while it is unpickled (the page
    // itself is mapped and released as it is decoded).
    uint64_t max_snapshot_bytes = uint64_t(16) << 30;
};

// 0..100 as Importer::probe.
int probe(std::span<const std::byte> head, std::string_view path);

// `name` becomes TraceMetadata::name.
Result<Trace> importBytes(std::span<const std::byte> bytes, const TaskContext& ctx = {},
                          std::string name = {});
Result<Trace> importFile(const std::string& path, const TaskContext& ctx = {});

// MemoryViz HTML pages: 0..100 as Importer::probe, and the import of the
// embedded snapshot (the same trace as importing that pickle, plus the
// properties above).
int probeHtml(std::span<const std::byte> head, std::string_view path);
Result<Trace> importHtmlBytes(std::span<const std::byte> bytes, const TaskContext& ctx = {},
                              std::string name = {}, const HtmlLimits& limits = {});
Result<Trace> importHtmlFile(const std::string& path, const TaskContext& ctx = {},
                             const HtmlLimits& limits = {});

// Protocol 4, the opcodes memory_viz's own unpickler reads.
Result<void> exportFile(const Trace& trace, const std::string& path, const TaskContext& ctx = {});

}  // namespace pytorch_snapshot
}  // namespace memscope
