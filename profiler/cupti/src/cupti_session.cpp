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
#include "exit_handlers.h"
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

std::atomic<bool> g_started{false};
std::atomic<bool> g_said_refused{false};
std::atomic<bool> g_said_no_callbacks{false};
std::atomic<bool> g_said_vmm{false};
std::atomic<bool> g_said_failed{false};

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
    try {
        if (*buffer) Tracer::instance().delivery().bufferRequested();
    } catch (...) {
        // Only a count for the delivery monitor.
    }
}

void CUPTIAPI bufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                              size_t valid_size) {
    try {
        Tracer& tracer = Tracer::instance();
        tracer.delivery().bufferCompleted();
        Tracer::Use use(tracer);
        if (BackgroundTraceWriter* writer = use.writer()) {
            StackStore* stacks = tracer.options().stacks ? &tracer.stacks() : nullptr;
            WriterSink sink(*writer, tracer.phases(), stacks);
            DecoderOptions options;
            options.tensor_level = tracer.options().tensor_level;
            options.book = &tracer.book();
            const DecodeStats stats = decodeActivityBuffer(buffer, valid_size, sink, options);
            tracer.delivery().recordsDelivered(stats.memory_records, stats.last_time);
            size_t dropped = 0;
            if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS &&
                dropped > 0)
                appendDroppedMarker(sink, stats.last_time ? stats.last_time : cuptiNowNs(),
                                    dropped);
            // The index also prunes itself as phases open (phase_index.h);
            // here the horizon follows the records' own time.
            if (stats.last_time > PhaseIndex::kHorizonNs)
                tracer.phases().forgetBefore(stats.last_time - PhaseIndex::kHorizonNs);
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
    if (tracer.options().vmm_for_expandable_segments)
        MEMSCOPE_LOG_ONCE(g_said_vmm,
                          "PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True: recording the "
                          "virtual-memory calls too (MEMSCOPE_VMM_CALLBACKS=0 turns this off)");
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

// Called by the CUDA driver at cuInit. Always 1, as in NVIDIA's injection
// samples: a 0 can make the driver fail cuInit, i.e. the traced program,
// for a tracer that merely could not start. A refusal is said on stderr.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
    using namespace memscope::cupti;
    if (g_started.exchange(true)) return 1;
    try {
        // First, whatever follows: cuInit is under way, so this exit handler
        // runs before CUDA's own teardown (exit_handlers.h).
        installCudaExitHandler(Tracer::instance());
        start();  // a refusal, or no file, is said on stderr there
    } catch (...) {
        MEMSCOPE_LOG_ONCE(g_said_failed, "the tracer could not start; the program runs on");
    }
    return 1;
}
