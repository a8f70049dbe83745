#pragma once
// Holds the importers and exporters a front end can use: the built-in ones
// (registered by memscope_plugins) and shared libraries from plugin folders.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "memscope/open/plugin.h"

namespace memscope {

struct LoadedLibrary;

struct PluginLoadReport {
    std::vector<std::string> loaded;  // library paths
    std::vector<std::string> errors;  // "PATH: what went wrong"
};

class PluginRegistry {
public:
    PluginRegistry();
    ~PluginRegistry();
    PluginRegistry(const PluginRegistry&) = delete;
    PluginRegistry& operator=(const PluginRegistry&) = delete;

    // A later registration with the same id replaces the earlier one.
    void addImporter(std::unique_ptr<Importer> importer);
    void addExporter(std::unique_ptr<Exporter> exporter);

    const Importer* importer(std::string_view id) const;
    const Exporter* exporter(std::string_view id) const;
    std::vector<const Importer*> importers() const;
    std::vector<const Exporter*> exporters() const;

    // The importer that probes the file highest; an error naming the file if none
    // recognizes it or it cannot be read.
    Result<const Importer*> importerFor(const std::string& path) const;
    // An exporter whose extension ends the path ("out.pickle"), else an error.
    Result<const Exporter*> exporterForPath(const std::string& path) const;

    // Probe, then import; errors name the file. `used`, when given, receives
    // the importer that read it (the file's format).
    Result<Trace> load(const std::string& path, const TaskContext& ctx = {},
                       const Importer** used = nullptr) const;

    // Loads every *.so in each folder. Bad libraries are reported, not fatal.
    PluginLoadReport loadFolder(const std::filesystem::path& folder);
    Result<void> loadLibrary(const std::filesystem::path& library);

    // $MEMSCOPE_PLUGIN_PATH (':'-separated), <exe>/../lib/memscope/plugins,
    // and $XDG_DATA_HOME/memscope/plugins (default ~/.local/share/...).
    static std::vector<std::filesystem::path> defaultPluginFolders();

private:
    // Declared first so that it is destroyed last: a library is closed only after
    // the plugins it created are gone.
    std::vector<std::unique_ptr<LoadedLibrary>> libraries_;
    std::vector<std::unique_ptr<Importer>> importers_;
    std::vector<std::unique_ptr<Exporter>> exporters_;
};

}  // namespace memscope
