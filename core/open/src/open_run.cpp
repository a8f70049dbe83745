#include "memscope/open/open_run.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "memscope/base/file_io.h"
#include "memscope/format/native_format.h"
#include "memscope/inference/inference.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

bool startsWithNativeMagic(const std::string& path) {
    // The guarded open: a path that became a FIFO since it was listed is
    // not waited on (the load that follows refuses it with the reason).
    auto in = ReadableFile::open(path, "the trace");
    if (!in) return false;
    char head[8] = {};
    auto got = in->read(head, sizeof head);
    return got && *got == kNativeMagic.size() &&
           std::memcmp(head, kNativeMagic.data(), kNativeMagic.size()) == 0;
}

uint64_t toNumber(std::string_view text) {
    uint64_t n = 0;
    std::from_chars(text.data(), text.data() + text.size(), n);
    return n;
}

// A marker's text is its warning; the CUPTI tracer's takeover marker carries
// only a count of allocation calls it saw without records.
LoadWarning recorderNotice(std::string_view key, std::string_view value) {
    const bool count = !value.empty() && value.find_first_not_of("0123456789") == value.npos;
    if (key == "cupti_taken_over" && count)
        return {WarningKind::DroppedRecords,
                std::string(value) +
                    " CUDA allocation calls near the end have no CUPTI record: another tool "
                    "(torch.profiler, Nsight) took CUPTI's records over",
                toNumber(value)};
    return {WarningKind::DroppedRecords, std::string(value), 1};
}

// Gaps a recorder wrote into the trace itself (CUPTI's dropped buffers,
// records it could not decode) are warnings too.
void recordedGaps(const Trace& trace, std::vector<LoadWarning>& out) {
    uint64_t dropped = 0, undecodable = 0;
    for (const EventAttribute& a : trace.attributes) {
        const std::string_view key = trace.string(a.key);
        if (key == "dropped_records")
            dropped += toNumber(trace.string(a.value));
        else if (key == "undecodable_bytes")
            undecodable += toNumber(trace.string(a.value));
        // Written by the recording merge (recording_merge.h): the marker's
        // text is the warning.
        else if (key == "history_gap" || key == "cupti_taken_over")
            out.push_back(recorderNotice(key, trace.string(a.value)));
        else if (key == "nvtx_name_cap_reached")
            out.push_back({WarningKind::Other,
                           "more than " + std::string(trace.string(a.value)) +
                               " distinct NVTX range names: later ones are grouped by the text "
                               "before their first ',' or '('",
                           1});
    }
    if (dropped)
        out.push_back({WarningKind::DroppedRecords,
                       std::to_string(dropped) +
                           " records were dropped while recording (gaps in the timeline)",
                       dropped});
    if (undecodable)
        out.push_back(
            {WarningKind::SkippedRecords,
             std::to_string(undecodable) + " bytes of recorded records could not be decoded",
             undecodable});
}

std::string stem(const std::string& path) {
    return fs::path(path).stem().string();
}

// Runs `work` on a thread of its own until join(); where no thread can
// start, join() runs it. What the work throws, join() throws.
class BesideTask {
public:
    explicit BesideTask(std::function<void()> work) : work_(std::move(work)) {
        if (!work_) return;
        try {
            thread_ = std::thread([this] { runWork(); });
        } catch (const std::system_error&) {
            // No thread: join() runs it on this one.
        }
    }
    ~BesideTask() {
        if (thread_.joinable()) thread_.join();
    }
    BesideTask(const BesideTask&) = delete;
    BesideTask& operator=(const BesideTask&) = delete;

    void join() {
        if (thread_.joinable())
            thread_.join();
        else if (work_)
            runWork();
        work_ = nullptr;
        if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
    }

private:
    void runWork() {
        try {
            work_();
        } catch (...) {
            failure_ = std::current_exception();
        }
    }
    std::function<void()> work_;
    std::exception_ptr failure_;
    std::thread thread_;
};

}  // namespace

std::vector<LoadWarning> OpenedRun::warnings() const {
    std::vector<LoadWarning> all;
    for (const OpenedTrace& p : parts) all.insert(all.end(), p.warnings.begin(), p.warnings.end());
    return all;
}

Result<OpenedTrace> openTrace(Trace trace, const std::string& path, const TaskContext& ctx,
                              const OpenOptions& options) {
    OpenedTrace out;
    out.path = path;
    out.format = trace.metadata.source_format;
    recordedGaps(trace, out.warnings);
    // Inference and the timeline walk the same per-device orders: made once.
    std::optional<detail::DeviceOrder> order;
    if (options.infer && options.timeline) {
        // A digest's events have no phases to infer from: its source's
        // inferred categories travel with it.
        StageClock clock(options.stages, "inference");
        if (trace.digest) {
            applyDigestInferences(trace);
        } else {
            order = detail::deviceOrder(trace);
            BesideTask beside(options.beside_inference
                                  ? options.beside_inference(path, trace, *order)
                                  : std::function<void()>());
            inferMissingLabels(trace, *order, ctx);
            beside.join();
        }
    }
    if (ctx.cancelled()) return cancelledError();
    auto shared = std::make_shared<const Trace>(std::move(trace));
    if (options.timeline) {
        StageClock clock(options.stages, "timeline");
        auto tl = order ? Timeline::build(*shared, std::move(*order), ctx, options.timeline_options)
                        : Timeline::build(*shared, ctx, options.timeline_options);
        if (!tl) return makeError(path + ": " + tl.message());
        out.timeline = std::move(*tl);
    }
    out.trace = std::move(shared);
    return out;
}

Result<OpenedTrace> openTrace(const std::string& path, const PluginRegistry& registry,
                              const TaskContext& ctx, const OpenOptions& options) {
    std::vector<LoadWarning> warnings;
    TaskContext local = ctx;
    local.warnings = &warnings;
    const Importer* used = nullptr;
    std::optional<StageClock> clock(std::in_place, options.stages, "import");
    Result<Trace> trace = registry.load(path, local, &used);
    std::string format = used ? used->id() : std::string();
    // The native reader is part of core: a native trace opens even where no
    // native importer plugin is registered.
    if (!trace && !registry.importer("native") && startsWithNativeMagic(path)) {
        warnings.clear();
        trace = importNativeTrace(path, local);
        if (!trace) trace = makeError(path + ": " + trace.message());
        format = "native";
    }
    clock.reset();
    if (!trace) return trace.error();
    if (ctx.cancelled()) return cancelledError();
    auto opened = openTrace(std::move(*trace), path, ctx, options);
    if (!opened) return opened;
    opened->format = format;
    opened->warnings.insert(opened->warnings.begin(), warnings.begin(), warnings.end());
    return opened;
}

std::vector<std::string> traceFilesIn(const std::string& folder, const PluginRegistry& registry) {
    std::vector<std::string> files;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code type_ec;
        if (!it->is_regular_file(type_ec)) continue;
        const std::string name = it->path().filename().string();
        if (name.empty() || name.front() == '.') continue;
        const std::string p = it->path().string();
        if (registry.importerFor(p).ok() || startsWithNativeMagic(p)) files.push_back(p);
    }
    std::sort(files.begin(), files.end());
    return files;
}

Result<OpenedRun> openRun(const std::string& path, const PluginRegistry& registry,
                          const TaskContext& ctx, const OpenOptions& options) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) return makeError(path + ": no such file or folder");
    OpenedRun run;
    run.path = path;
    if (!fs::is_directory(status)) {
        // A pipe or device cannot be read twice (probe, then load): refuse it
        // with a message rather than hang on it.
        if (auto regular = requireRegularFile(path); !regular) return regular.error();
        auto one = openTrace(path, registry, ctx, options);
        if (!one) return one.error();
        run.name = one->trace->metadata.name.empty() ? stem(path) : one->trace->metadata.name;
        run.parts.push_back(std::move(*one));
        return run;
    }
    run.folder = true;
    run.name = fs::path(path).lexically_normal().filename().string();
    if (run.name.empty() || run.name == ".")
        run.name = fs::absolute(path, ec).lexically_normal().parent_path().filename().string();
    const std::vector<std::string> files = traceFilesIn(path, registry);
    if (files.empty()) return makeError(path + ": the folder holds no trace memscope can read");
    for (const std::string& f : files) {
        if (ctx.cancelled()) return cancelledError();
        auto one = openTrace(f, registry, ctx, options);
        if (!one) return one.error();
        run.parts.push_back(std::move(*one));
    }
    // Ranks in order where the traces know their rank, the others after them
    // in file order.
    std::stable_sort(run.parts.begin(), run.parts.end(),
                     [](const OpenedTrace& a, const OpenedTrace& b) {
                         const int32_t ra = a.trace->metadata.rank, rb = b.trace->metadata.rank;
                         if ((ra < 0) != (rb < 0)) return rb < 0;
                         return ra < rb;
                     });
    return run;
}

}  // namespace memscope
