#include "memscope/open/open_each.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>

#include "memscope/base/parallel_for.h"

namespace memscope {

void openEach(const std::vector<std::string>& paths, const PluginRegistry& registry,
              const TaskContext& ctx, const OpenEachOptions& options,
              const std::function<void(size_t, Result<OpenedTrace>)>& consume) {
    // Progress: bytes of the files finished, plus what each file in flight
    // reported last, over all the files' bytes.
    uint64_t total = 0;
    std::vector<uint64_t> sizes(paths.size(), 0);
    for (size_t i = 0; i < paths.size(); ++i) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(paths[i], ec);
        sizes[i] = ec ? 0 : uint64_t(size);
        total += sizes[i];
    }
    // Counted and reported under one lock: ctx.progress is not required to be
    // thread-safe, and a count taken before the lock could be reported after
    // a larger one (the progress going back).
    uint64_t done = 0;
    std::mutex report_mutex;
    auto advance = [&](uint64_t by) {
        std::lock_guard lock(report_mutex);
        done += by;
        if (ctx.progress) ctx.report(done, total);
    };
    parallelFor(paths.size(), options.threads, [&](size_t i) {
        if (ctx.cancelled()) {
            consume(i, cancelledError());
            return;
        }
        uint64_t reported = 0;  // of this file, already counted in `done`
        TaskContext local;
        local.cancel = ctx.cancel;
        local.progress = [&](uint64_t file_done, uint64_t) {
            const uint64_t capped = std::min(file_done, sizes[i]);
            if (capped <= reported) return;
            advance(capped - reported);
            reported = capped;
        };
        Result<OpenedTrace> opened = openTrace(paths[i], registry, local, options.open);
        advance(sizes[i] - reported);
        consume(i, std::move(opened));
    });
}

}  // namespace memscope
