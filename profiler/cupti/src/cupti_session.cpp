// The CUDA injection entry point: the driver loads this library at cuInit
// (CUDA_INJECTION64_PATH) and calls InitializeInjection. Activity records only
// by default (no callback subscriber, so torch.profiler and Nsight can still
// attach); buffers are decoded on CUPTI's thread.

#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "activity_decoder.h"
#include "api_callbacks.h"
#include "clock.h"
#include "log.h"
#include "tracer.h"
#include "writer_sink.h"

namespace memscope::cupti {
namespace {

constexpr size_t kBufferBytes = 4u << 20;  // ~32k Memory4 records
constexpr size_t kBufferAlign = 8;         // CUPTI's documented requirement
// CUPTI hands over buffers at least this often even when they are not full,
// so that a killed process loses about a second.
constexpr uint32_t kCuptiFlushPeriodMs = 500;
// Phases that ended this long before the newest record can no longer contain
// one; forgetting them keeps the phase index small on long runs.
constexpr int64_t kPhaseHorizonNs = 120'000'000'000;

std::atomic<bool> g_started{false};
std::atomic<bool> g_said_refused{false};
std::atomic<bool> g_said_no_callbacks{false};

std::string resultText(CUptiResult result) {
    const char* text = "unknown error";
    cuptiGetResultString(result, &text);
    return text;
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *max_records = 0;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    // No buffer: CUPTI drops records and counts them; we report the count.
    *size = *buffer ? kBufferBytes : 0;
}

void CUPTIAPI bufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                              size_t valid_size) {
    try {
        Tracer& tracer = Tracer::instance();
        Tracer::Use use(tracer);
        if (BackgroundTraceWriter* writer = use.writer()) {
            StackStore* stacks = tracer.options().stacks ? &tracer.stacks() : nullptr;
            WriterSink sink(*writer, tracer.phases(), stacks);
            DecoderOptions options;
            options.tensor_level = tracer.options().tensor_level;
            const DecodeStats stats = decodeActivityBuffer(buffer, valid_size, sink, options);
            size_t dropped = 0;
            if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS &&
                dropped > 0)
                appendDroppedMarker(sink, stats.last_time ? stats.last_time : cuptiNowNs(),
                                    dropped);
            if (stats.last_time > kPhaseHorizonNs)
                tracer.phases().forgetBefore(stats.last_time - kPhaseHorizonNs);
        }
    } catch (...) {
        // Out of memory while decoding: this buffer's records are lost.
    }
    std::free(buffer);
}

bool start() {
    Tracer& tracer = Tracer::instance();
    if (tracer.disabled()) return false;
    CUptiResult r = cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
    if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
    if (r != CUPTI_SUCCESS) {
        MEMSCOPE_LOG_ONCE(g_said_refused,
                          "CUPTI is not available (%s: no driver, or another profiler holds it); "
                          "CUDA memory is not recorded, the program runs on",
                          resultText(r).c_str());
        return false;
    }
    tracer.setCuptiActive();
    // Pools matter only with cudaMallocAsync; an older driver may refuse them.
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
    cuptiActivityFlushPeriod(kCuptiFlushPeriodMs);
    if (const Result<void> callbacks = startApiCallbacks(tracer.options()); !callbacks)
        MEMSCOPE_LOG_ONCE(g_said_no_callbacks,
                          "host stacks / virtual-memory calls are not recorded: %s",
                          callbacks.message().c_str());
    // Open the file now: the header (clocks) belongs to the start of the run,
    // and the exit handlers come with it.
    Tracer::Use use(tracer);
    return use.writer() != nullptr;
}

}  // namespace
}  // namespace memscope::cupti

// Called by the CUDA driver at cuInit. The return value is only informative:
// whatever happens, the program runs on.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
    using namespace memscope::cupti;
    if (g_started.exchange(true)) return 1;
    try {
        return start() ? 1 : 0;
    } catch (...) {
        return 0;
    }
}
