#include "cli_common.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "memscope/builtin_plugins.h"

namespace memscope::cli {

const PluginRegistry& registry() {
    static PluginRegistry* instance = [] {
        auto* r = new PluginRegistry();  // lives for the process: plugins may be dlopen'ed
        const PluginLoadReport report = registerAllPlugins(*r);
        for (const auto& e : report.errors) std::fprintf(stderr, "memscope-cli: plugin skipped: %s\n", e.c_str());
        return r;
    }();
    return *instance;
}

Result<Trace> loadWithProgress(const std::string& path, const Importer** used) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    const bool show = !ec && size > (64u << 20) && isatty(STDERR_FILENO);
    TaskContext ctx;
    if (show) {
        auto last = std::chrono::steady_clock::now();
        ctx.progress = [path, last](uint64_t done, uint64_t total) mutable {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(200) && done < total) return;
            last = now;
            std::fprintf(stderr, "\rloading %s: %3d%%", path.c_str(),
                         total ? int(done * 100 / total) : 0);
            std::fflush(stderr);
        };
    }
    auto trace = registry().load(path, ctx, used);
    if (show) std::fprintf(stderr, "\r\033[K");
    return trace;
}

std::string formatBytes(int64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes < 0 ? -bytes : bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
    char buf[48];
    if (u == 0) std::snprintf(buf, sizeof buf, "%s%lld B", bytes < 0 ? "-" : "", (long long)(bytes < 0 ? -bytes : bytes));
    else std::snprintf(buf, sizeof buf, "%s%.2f %s", bytes < 0 ? "-" : "", v, kUnits[u]);
    return buf;
}

}  // namespace memscope::cli
