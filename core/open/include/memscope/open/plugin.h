#pragma once
// The importer/exporter plugin interface. Small and versioned: a shared library
// dropped into a plugins folder is built against this header and must report
// the same kPluginAbiVersion, or it is refused with a message.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"

namespace memscope {

// Bump on any change to the classes below or to Trace's layout.
inline constexpr int kPluginAbiVersion =
    3;  // 2: Trace::metrics, TaskContext::warnings; 3: TraceMetadata's key index

class Importer {
public:
    virtual ~Importer() = default;
    virtual std::string id() const = 0;                       // stable, e.g. "pytorch-snapshot"
    virtual std::string description() const = 0;              // for --help and file dialogs
    virtual std::vector<std::string> extensions() const = 0;  // e.g. {".pickle"}

    // How sure this importer is that it can read the file, from its first bytes
    // (up to 4 KiB) and its path: 0 = not mine, 100 = certain (magic matched).
    virtual int probe(std::span<const std::byte> head, std::string_view path) const = 0;

    virtual Result<Trace> import(const std::string& path, const TaskContext& ctx) const = 0;
};

class Exporter {
public:
    virtual ~Exporter() = default;
    virtual std::string id() const = 0;
    virtual std::string description() const = 0;
    virtual std::string extension() const = 0;  // default for --to inference
    virtual Result<void> exportTrace(const Trace& trace, const std::string& path,
                                     const TaskContext& ctx) const = 0;
};

class PluginRegistry;

}  // namespace memscope

// A dynamically loaded plugin exports these two C functions:
//   extern "C" int memscope_plugin_abi_version();           // returns kPluginAbiVersion
//   extern "C" void memscope_register_plugins(memscope::PluginRegistry* registry);
#define MEMSCOPE_PLUGIN_ABI_SYMBOL "memscope_plugin_abi_version"
#define MEMSCOPE_PLUGIN_REGISTER_SYMBOL "memscope_register_plugins"
