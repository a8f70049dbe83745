#include "tracer.h"

#include <cupti.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "clock.h"
#include "exit_handlers.h"
#include "log.h"
#include "trace_file.h"

namespace memscope::cupti {
namespace {
// The background writer's period. With CUPTI's own flush period (see
// cupti_session.cpp) a killed process loses about a second at most.
constexpr auto kWriterFlushPeriod = std::chrono::milliseconds(500);
// How long shutdown waits for calls in flight before closing anyway.
constexpr auto kUserDrainTimeout = std::chrono::milliseconds(200);
// How long a second shutdown (exit racing a signal) waits for the first.
constexpr auto kSecondCallerWait = std::chrono::milliseconds(2000);

std::atomic<bool> g_said_no_file{false};
std::atomic<bool> g_said_close_failed{false};
std::atomic<bool> g_said_taken_over{false};
}  // namespace

Tracer& Tracer::instance() {
    static Tracer* tracer = new Tracer();  // leaked on purpose (see header)
    return *tracer;
}

Tracer::Tracer() : options_(optionsFromEnvironment()) {
    installForkHandler(*this);
}

Tracer::Use::Use(Tracer& tracer) : tracer_(tracer) {
    tracer_.users_.fetch_add(1, std::memory_order_acq_rel);
    if (!tracer_.disabled()) writer_ = tracer_.ensureWriter();
}

Tracer::Use::~Use() {
    tracer_.users_.fetch_sub(1, std::memory_order_acq_rel);
}

BackgroundTraceWriter* Tracer::ensureWriter() {
    if (auto* w = writer_.load(std::memory_order_acquire)) return w;
    if (creation_failed_.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard lock(create_mutex_);
    if (auto* w = writer_.load(std::memory_order_acquire)) return w;
    if (disabled() || creation_failed_.load()) return nullptr;
    BackgroundTraceWriter* w = createWriter();
    if (!w) {
        creation_failed_.store(true, std::memory_order_release);
        return nullptr;
    }
    writer_.store(w, std::memory_order_release);
    installExitHandlers(*this);
    return w;
}

BackgroundTraceWriter* Tracer::createWriter() {
    const ProcessIdentity process = currentProcess();
    std::error_code ec;
    std::filesystem::create_directories(options_.output_dir, ec);  // may exist: fine
    path_ = (std::filesystem::path(options_.output_dir) / traceFileName(process)).string();
    auto created = BackgroundTraceWriter::create(path_, traceMetadata(process, options_), {},
                                                 kWriterFlushPeriod);
    if (!created) {
        MEMSCOPE_LOG_ONCE(g_said_no_file,
                          "cannot write the trace (%s); not recording, the program runs on",
                          created.message().c_str());
        return nullptr;
    }
    owned_writer_ = std::move(created.value());
    return owned_writer_.get();
}

void Tracer::flush() {
    if (disabled() || !writer_.load(std::memory_order_acquire)) return;
    if (cuptiActive()) cuptiActivityFlushAll(0);
    Use use(*this);
    if (auto* w = use.writer()) (void)w->flush();  // a failure shows at close
}

void Tracer::shutdown() {
    if (shut_down_.exchange(true)) {
        // Exit and a fatal signal can race: the second caller waits (briefly)
        // so that the process does not end halfway through the close.
        const auto deadline = std::chrono::steady_clock::now() + kSecondCallerWait;
        while (!closed_.load(std::memory_order_acquire) &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return;
    }
    struct MarkClosed {
        std::atomic<bool>& closed;
        ~MarkClosed() { closed.store(true, std::memory_order_release); }
    } mark_closed{closed_};
    if (disabled()) return;  // a forked child, or never started
    if (!writer_.load(std::memory_order_acquire)) {
        disabled_.store(true, std::memory_order_release);
        return;
    }
    // Forced: also the buffers CUPTI is still filling, so that the last
    // allocations before exit are in the file.
    if (cuptiActive()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    try {
        Use use(*this);
        if (auto* w = use.writer()) noteLosses(*w);
    } catch (...) {
        // Out of memory: the trace closes without the notes.
    }
    disabled_.store(true, std::memory_order_release);
    const auto deadline = std::chrono::steady_clock::now() + kUserDrainTimeout;
    while (users_.load(std::memory_order_acquire) > 0 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (auto* w = writer_.load(std::memory_order_acquire)) {
        if (auto closed = w->close(); !closed)
            MEMSCOPE_LOG_ONCE(g_said_close_failed, "the trace %s may be incomplete: %s",
                              path_.c_str(), closed.message().c_str());
    }
}

void Tracer::noteLosses(BackgroundTraceWriter& writer) {
    if (const uint64_t unknown = book_.unknownReleases())
        writer.setProperty("recorder.unknown_releases", std::to_string(unknown));
    if (const uint64_t capped = names_.replaced())
        writer.setProperty("recorder.nvtx_names_capped", std::to_string(capped));
    if (!cuptiActive()) return;
    const DeliveryMonitor::Verdict v = delivery_.verdict();
    writer.setProperty("cupti.memory_records", std::to_string(v.memory_records));
    writer.setProperty("cupti.allocation_calls_seen", std::to_string(v.calls_seen));
    // A hint only (see delivery_monitor.h): not a verdict.
    writer.setProperty("cupti.buffers_outstanding_at_exit", std::to_string(v.buffers_outstanding));
    if (!v.taken_over) return;
    writer.setProperty("cupti.taken_over", "1");
    Event marker;
    marker.kind = EventKind::Marker;
    marker.time = cuptiNowNs();
    marker.phase = phases_.innermostAt(marker.time);
    const uint64_t index = writer.append(marker);
    writer.addAttribute(index, writer.internString("cupti_taken_over"),
                        writer.internString(std::to_string(v.calls_without_record)));
    MEMSCOPE_LOG_ONCE(g_said_taken_over,
                      "%llu CUDA allocation calls near the end have no CUPTI record: another "
                      "tool (torch.profiler, Nsight) probably took CUPTI's activity records "
                      "over; the trace %s misses allocations from then on",
                      static_cast<unsigned long long>(v.calls_without_record), path_.c_str());
}

}  // namespace memscope::cupti
