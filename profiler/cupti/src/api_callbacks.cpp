#include "api_callbacks.h"

#include <cupti.h>

#include <string>
#include <vector>

#include "clock.h"
#include "tracer.h"

namespace memscope::cupti {
namespace {

constexpr CUpti_CallbackId kRuntimeAllocations[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
};
constexpr CUpti_CallbackId kDriverAllocations[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,   CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,  CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
};
constexpr CUpti_CallbackId kDriverVmm[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
};

bool isVmm(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return false;
    for (CUpti_CallbackId id : kDriverVmm)
        if (id == cbid) return true;
    return false;
}

// A runtime allocation calls the driver's: the stack is captured once, at the
// outermost call, and filed under both correlation ids (the activity record
// carries one of them).
thread_local int t_depth = 0;
thread_local std::vector<void*> t_stack;
thread_local int64_t t_enter_time = 0;

// cudaError_t and CUresult alike: 0 is success.
bool succeeded(const CUpti_CallbackData& data) {
    const auto* result = static_cast<const int*>(data.functionReturnValue);
    return result && *result == 0;
}

void onAllocationCall(const CUpti_CallbackData& data) {
    Tracer& tracer = Tracer::instance();
    if (data.callbackSite == CUPTI_API_ENTER) {
        if (t_depth++ == 0) {
            t_enter_time = cuptiNowNs();
            if (tracer.options().stacks && !tracer.disabled()) t_stack = StackStore::captureHere();
        }
        if (tracer.options().stacks && !tracer.disabled())
            tracer.stacks().put(data.correlationId, t_stack);
    } else if (t_depth > 0) {
        // Each successful call (the outermost of a runtime/driver pair) must
        // produce a memory record: the delivery monitor checks that one came.
        if (--t_depth == 0 && succeeded(data)) tracer.delivery().allocationCall(t_enter_time);
    }
}

void onVmmCall(CUpti_CallbackId cbid, const CUpti_CallbackData& data) {
    if (data.callbackSite != CUPTI_API_EXIT) return;
    const auto* result = static_cast<const CUresult*>(data.functionReturnValue);
    if (result && *result != CUDA_SUCCESS) return;
    Tracer& tracer = Tracer::instance();
    Tracer::Use use(tracer);
    BackgroundTraceWriter* writer = use.writer();
    if (!writer) return;

    Event e;
    e.time = cuptiNowNs();
    e.phase = tracer.phases().innermostAt(e.time);
    uint32_t device = 0;
    if (data.context && cuptiGetDeviceId(data.context, &device) == CUPTI_SUCCESS)
        e.device = int16_t(device);
    const char* operation = nullptr;
    switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
            const auto* p = static_cast<const cuMemMap_params*>(data.functionParams);
            e.kind = EventKind::SegmentMap;
            e.address = p->ptr;
            e.size = p->size;
            break;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
            const auto* p = static_cast<const cuMemUnmap_params*>(data.functionParams);
            e.kind = EventKind::SegmentUnmap;
            e.address = p->ptr;
            e.size = p->size;
            break;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
            // Physical memory without an address yet: a marker; the mapping is
            // what adds to the reserved bytes.
            const auto* p = static_cast<const cuMemCreate_params*>(data.functionParams);
            e.kind = EventKind::Marker;
            e.size = p->size;
            if (p->handle) e.address = *p->handle;
            if (p->prop && p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
                e.device = int16_t(p->prop->location.id);
            operation = "create";
            break;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuMemRelease: {
            const auto* p = static_cast<const cuMemRelease_params*>(data.functionParams);
            e.kind = EventKind::Marker;
            e.address = p->handle;
            operation = "release";
            break;
        }
        default:
            return;
    }
    const uint64_t index = writer->append(e);
    if (operation)
        writer->addAttribute(index, writer->internString("vmm"), writer->internString(operation));
}

void CUPTIAPI onApiCall(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                        const void* cbdata) {
    try {
        const auto& data = *static_cast<const CUpti_CallbackData*>(cbdata);
        if (isVmm(domain, cbid))
            onVmmCall(cbid, data);
        else
            onAllocationCall(data);
    } catch (...) {
        // Out of memory while tracing: lose this event, never the program.
    }
}

Error failure(const char* what, CUptiResult result) {
    const char* text = "unknown error";
    cuptiGetResultString(result, &text);
    return makeError(std::string(what) + ": " + text);
}

}  // namespace

Result<void> startApiCallbacks(const TracerOptions& options) {
    if (!options.needsSubscriber()) return {};
    CUpti_SubscriberHandle subscriber = nullptr;
    if (CUptiResult r = cuptiSubscribe(&subscriber, onApiCall, nullptr); r != CUPTI_SUCCESS)
        return failure("cuptiSubscribe (another profiler may hold the callback API)", r);
    auto enable = [&](CUpti_CallbackDomain domain, CUpti_CallbackId cbid) -> Result<void> {
        const CUptiResult r = cuptiEnableCallback(1, subscriber, domain, cbid);
        if (r != CUPTI_SUCCESS) return failure("cuptiEnableCallback", r);
        return {};
    };
    // The allocation calls with any subscriber: with stacks for their stack,
    // and always so that records lost to another CUPTI client are noticed
    // (delivery_monitor.h).
    {
        if (options.stacks) StackStore::warmUp();
        for (CUpti_CallbackId id : kRuntimeAllocations)
            if (auto r = enable(CUPTI_CB_DOMAIN_RUNTIME_API, id); !r) return r;
        for (CUpti_CallbackId id : kDriverAllocations)
            if (auto r = enable(CUPTI_CB_DOMAIN_DRIVER_API, id); !r) return r;
    }
    if (options.vmm_callbacks) {
        for (CUpti_CallbackId id : kDriverVmm)
            if (auto r = enable(CUPTI_CB_DOMAIN_DRIVER_API, id); !r) return r;
    }
    return {};
}

}  // namespace memscope::cupti
