// The C entry points the Python hook calls through ctypes (see
// docs/HOOK_FORMAT.md): start capturing the calling thread's c10
// allocations into a log, and the ops that made them, flush it, and the LibTorch version this was
// built against, so that the hook never loads it into another one (the hook's base class layout is
// version-specific).
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <time.h>
#include <torch/version.h>

#include <memory>

#include "capture_log_writer.h"

namespace memscope::torch_capture {
namespace {

int64_t realtimeNanos() {
    // CLOCK_REALTIME: the clock of CUPTI's timestamps, PyTorch's time_us and
    // Python's time.time_ns(), so all sources of one trace line up.
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

CaptureLogWriter& writer() {
    static auto* w = new CaptureLogWriter();  // leaked: allocations go on during exit
    return *w;
}

// Which op made each allocation (capture_log.h's op records). Every op a
// thread runs opens a frame here; an allocation marks the innermost one, and
// an op that ends marked is logged and marks its caller, so only the ops
// around allocations reach the log (about as many records as allocations,
// and every logged op's callers are logged too: depths stay consistent).
// Plain thread_local arrays: no destructor runs while a thread exits with
// ops still ending.
constexpr uint32_t kMaxOpFrames = 256;  // deeper ops are counted, not kept

struct OpFrame {
    int64_t start;
    bool allocated;
};
thread_local OpFrame t_ops[kMaxOpFrames];
thread_local uint32_t t_op_depth = 0;

void markAllocation() {
    const uint32_t depth = t_op_depth;
    if (depth > 0 && depth <= kMaxOpFrames) t_ops[depth - 1].allocated = true;
}

std::unique_ptr<at::ObserverContext> opStarted(const at::RecordFunction&) {
    const uint32_t depth = t_op_depth++;
    if (depth < kMaxOpFrames) t_ops[depth] = {realtimeNanos(), false};
    return nullptr;
}

void opEnded(const at::RecordFunction& fn, at::ObserverContext*) {
    if (t_op_depth == 0) return;  // began before the callback was added
    const uint32_t depth = --t_op_depth;
    if (depth >= kMaxOpFrames || !t_ops[depth].allocated) return;
    if (depth > 0) t_ops[depth - 1].allocated = true;
    const char* name = fn.name();
    // depth < kMaxOpFrames: fits the record's uint16.
    writer().appendOp(t_ops[depth].start, realtimeNanos(), name ? name : "", uint16_t(depth));
}

// c10's allocators call reportMemoryUsage for every allocation (size > 0) and
// free (size < 0) while this is the thread's PROFILER_STATE debug info; the
// autograd engine carries it to the threads it runs backward on.
class CpuAllocationHook final : public c10::MemoryReportingInfoBase {
public:
    // The totals' types differ between LibTorch 1.x (int64_t) and 2.x
    // (size_t); exactly one overrides the base (hence no `override`).
    void reportMemoryUsage(void* ptr, int64_t size, int64_t, int64_t, c10::Device device) {
        record(ptr, size, device);
    }
    void reportMemoryUsage(void* ptr, int64_t size, size_t, size_t, c10::Device device) {
        record(ptr, size, device);
    }
    bool memoryProfilingEnabled() const override { return true; }

private:
    static void record(void* ptr, int64_t size, const c10::Device& device) {
        // An op that allocates on any device is logged (CUDA ones too: the
        // history's allocations are attributed by time).
        if (size > 0) markAllocation();
        // CUDA memory comes from the allocator's own history, with stacks.
        if (size == 0 || ptr == nullptr || !device.is_cpu()) return;
        writer().append(realtimeNanos(), reinterpret_cast<uint64_t>(ptr), size);
    }
};

}  // namespace
}  // namespace memscope::torch_capture

extern "C" {

__attribute__((visibility("default"))) const char* memscope_capture_torch_version(void) {
    return TORCH_VERSION;
}

// 0 on success; -1 when the log cannot be created. Installs the hook on the
// calling thread (the hook calls it on the main thread) and leaves it there.
__attribute__((visibility("default"))) int memscope_capture_start(const char* path) {
    using namespace memscope::torch_capture;
    if (path == nullptr) return -1;
    if (writer().isOpen()) return 0;
    if (!writer().open(path)) return -1;
    try {
        c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                         std::make_shared<CpuAllocationHook>());
    } catch (...) {
        return -1;
    }
    return 0;
}

// Idle mode (`record --idle`): installs the hook on the calling thread with no
// log; the allocations alive are kept (by address) for a later
// memscope_capture_open. 0 on success.
__attribute__((visibility("default"))) int memscope_capture_install(void) {
    using namespace memscope::torch_capture;
    static bool installed = false;
    if (installed) return 0;
    writer().setTracking(true);
    try {
        c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                         std::make_shared<CpuAllocationHook>());
    } catch (...) {
        writer().setTracking(false);
        return -1;
    }
    installed = true;
    return 0;
}

// Opens a log (an attach window) that starts with the allocations alive now,
// logged at `time_ns` (0: now; a step window gives the instant before its
// step began, so that they count as alive when it begins); -1 when it cannot
// be created or one is open already. Any thread.
__attribute__((visibility("default"))) int memscope_capture_open(const char* path,
                                                                 int64_t time_ns) {
    using namespace memscope::torch_capture;
    if (path == nullptr) return -1;
    return writer().openWithLive(path, time_ns > 0 ? time_ns : realtimeNanos()) ? 0 : -1;
}

// Flushes and closes the log a window opened; 0, or -1 when the flush failed.
__attribute__((visibility("default"))) int memscope_capture_close(void) {
    return memscope::torch_capture::writer().close() ? 0 : -1;
}

// Logs the ops in whose span an allocation was made (at::RecordFunction, a
// global callback for every thread, FUNCTION scope only), alongside the
// allocations. Once per process; 0 on success, -1 when PyTorch refused it.
__attribute__((visibility("default"))) int memscope_capture_record_ops(void) {
    using namespace memscope::torch_capture;
    static bool added = false;
    if (added) return 0;
    try {
        at::addGlobalCallback(at::RecordFunctionCallback(opStarted, opEnded)
                                  .needsInputs(false)
                                  .needsOutputs(false)
                                  .scopes({at::RecordScope::FUNCTION}));
    } catch (...) {
        return -1;
    }
    added = true;
    return 0;
}

// The bytes of the CPU allocations alive (idle mode; 0 otherwise).
__attribute__((visibility("default"))) int64_t memscope_capture_live_bytes(void) {
    return memscope::torch_capture::writer().liveBytes();
}

__attribute__((visibility("default"))) int64_t memscope_capture_live_count(void) {
    return memscope::torch_capture::writer().liveCount();
}

__attribute__((visibility("default"))) int memscope_capture_flush(void) {
    return memscope::torch_capture::writer().flush() ? 0 : -1;
}

}  // extern "C"
