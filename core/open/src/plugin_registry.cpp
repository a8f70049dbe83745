#include "memscope/open/plugin_registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "memscope/base/file_io.h"

namespace memscope {

struct LoadedLibrary {
    void* handle = nullptr;
    ~LoadedLibrary() {
        if (handle) dlclose(handle);
    }
};

namespace {

constexpr size_t kProbeBytes = 4096;

template <typename T>
void replaceOrAdd(std::vector<std::unique_ptr<T>>& list, std::unique_ptr<T> item) {
    if (!item) return;
    for (auto& existing : list)
        if (existing->id() == item->id()) {
            existing = std::move(item);
            return;
        }
    list.push_back(std::move(item));
}

template <typename T>
const T* findById(const std::vector<std::unique_ptr<T>>& list, std::string_view id) {
    for (const auto& p : list)
        if (p->id() == id) return p.get();
    return nullptr;
}

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

PluginRegistry::PluginRegistry() = default;
PluginRegistry::~PluginRegistry() = default;

void PluginRegistry::addImporter(std::unique_ptr<Importer> importer) {
    replaceOrAdd(importers_, std::move(importer));
}
void PluginRegistry::addExporter(std::unique_ptr<Exporter> exporter) {
    replaceOrAdd(exporters_, std::move(exporter));
}

const Importer* PluginRegistry::importer(std::string_view id) const {
    return findById(importers_, id);
}
const Exporter* PluginRegistry::exporter(std::string_view id) const {
    return findById(exporters_, id);
}

std::vector<const Importer*> PluginRegistry::importers() const {
    std::vector<const Importer*> out;
    for (const auto& p : importers_) out.push_back(p.get());
    return out;
}

std::vector<const Exporter*> PluginRegistry::exporters() const {
    std::vector<const Exporter*> out;
    for (const auto& p : exporters_) out.push_back(p.get());
    return out;
}

Result<const Importer*> PluginRegistry::importerFor(const std::string& path) const {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        return makeError(path + ": is a folder, not a trace file");
    // The guarded open: never waits on a FIFO (one made after the folder was
    // listed included), refuses what is not a regular file.
    auto in = ReadableFile::open(path, "the trace");
    if (!in) return in.error();
    std::array<std::byte, kProbeBytes> head{};
    auto read = in->read(head.data(), head.size());
    if (!read) return read.error();
    const size_t got = *read;
    if (got == 0) return makeError(path + ": the file is empty");
    const Importer* best = nullptr;
    int bestScore = 0;
    for (const auto& imp : importers_) {
        const int score = imp->probe(std::span<const std::byte>(head.data(), got), path);
        if (score > bestScore) best = imp.get(), bestScore = score;
    }
    if (!best) {
        std::string known;
        for (const auto& imp : importers_) known += (known.empty() ? "" : ", ") + imp->id();
        return makeError(path + ": not a format memscope can read (tried: " +
                         (known.empty() ? std::string("no importers registered") : known) + ")");
    }
    return best;
}

Result<const Exporter*> PluginRegistry::exporterForPath(const std::string& path) const {
    for (const auto& exp : exporters_)
        if (!exp->extension().empty() && endsWith(path, exp->extension())) return exp.get();
    std::string known;
    for (const auto& exp : exporters_)
        known += (known.empty() ? "" : ", ") + exp->id() + " (" + exp->extension() + ")";
    return makeError(path +
                     ": no exporter for this file extension; use --to FORMAT, one of: " + known);
}

Result<Trace> PluginRegistry::load(const std::string& path, const TaskContext& ctx,
                                   const Importer** used) const {
    auto imp = importerFor(path);
    if (!imp) return imp.error();
    if (used) *used = *imp;
    auto trace = (*imp)->import(path, ctx);
    if (!trace) return makeError(path + ": " + trace.message());
    if (trace->metadata.source_format.empty()) trace->metadata.source_format = (*imp)->id();
    return trace;
}

Result<void> PluginRegistry::loadLibrary(const std::filesystem::path& library) {
    const std::string name = library.string();
    auto lib = std::make_unique<LoadedLibrary>();
    lib->handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) return makeError(name + ": cannot load (" + dlerror() + ")");
    using AbiFn = int (*)();
    using RegisterFn = void (*)(PluginRegistry*);
    auto abi = reinterpret_cast<AbiFn>(dlsym(lib->handle, MEMSCOPE_PLUGIN_ABI_SYMBOL));
    auto reg = reinterpret_cast<RegisterFn>(dlsym(lib->handle, MEMSCOPE_PLUGIN_REGISTER_SYMBOL));
    if (!abi || !reg)
        return makeError(name + ": not a memscope plugin (missing " MEMSCOPE_PLUGIN_ABI_SYMBOL
                                " or " MEMSCOPE_PLUGIN_REGISTER_SYMBOL ")");
    if (const int v = abi(); v != kPluginAbiVersion)
        return makeError(name + ": built for plugin ABI " + std::to_string(v) +
                         ", this memscope has " + std::to_string(kPluginAbiVersion) +
                         "; rebuild the plugin");
    libraries_.push_back(std::move(lib));
    reg(this);
    return {};
}

PluginLoadReport PluginRegistry::loadFolder(const std::filesystem::path& folder) {
    PluginLoadReport report;
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) return report;
    std::vector<std::filesystem::path> libs;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec))
        if (entry.path().extension() == ".so") libs.push_back(entry.path());
    std::sort(libs.begin(), libs.end());  // a stable order makes replacement predictable
    for (const auto& lib : libs) {
        if (auto r = loadLibrary(lib); r)
            report.loaded.push_back(lib.string());
        else
            report.errors.push_back(r.message());
    }
    return report;
}

std::vector<std::filesystem::path> PluginRegistry::defaultPluginFolders() {
    std::vector<std::filesystem::path> out;
    if (const char* env = std::getenv("MEMSCOPE_PLUGIN_PATH")) {
        std::string_view rest(env);
        while (!rest.empty()) {
            const size_t colon = rest.find(':');
            if (auto part = rest.substr(0, colon); !part.empty()) out.emplace_back(part);
            rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
        }
    }
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) out.push_back(exe.parent_path().parent_path() / "lib" / "memscope" / "plugins");
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
        out.push_back(std::filesystem::path(xdg) / "memscope" / "plugins");
    else if (const char* home = std::getenv("HOME"); home && *home)
        out.push_back(std::filesystem::path(home) / ".local" / "share" / "memscope" / "plugins");
    return out;
}

}  // namespace memscope
