#include "nvtx_hook.h"

#include <vector>

#include "clock.h"
#include "phase_names.h"
#include "tracer.h"

namespace memscope::cupti::nvtx {
namespace {

// NVTX push/pop nest per thread; the parent of a pushed range is the range
// this thread pushed before it.
thread_local std::vector<PhaseId> t_stack;

PhaseId addPhase(std::string_view name, PhaseId parent) {
    Tracer& tracer = Tracer::instance();
    Tracer::Use use(tracer);
    BackgroundTraceWriter* writer = use.writer();
    if (!writer) return PhaseId{};
    const PhaseGuess guess = classifyPhaseName(name);
    Phase phase;
    phase.name = writer->internString(name);
    phase.kind = guess.kind;
    phase.step = guess.step;
    phase.parent = parent;
    phase.start = cuptiNowNs();
    phase.end = phase.start;  // open until ended
    const PhaseId id = writer->addPhase(phase);
    tracer.phases().open(id, phase.start);
    return id;
}

void endPhase(PhaseId id) {
    if (id.isNull()) return;
    Tracer& tracer = Tracer::instance();
    Tracer::Use use(tracer);
    BackgroundTraceWriter* writer = use.writer();
    if (!writer) return;
    const int64_t now = cuptiNowNs();
    writer->endPhase(id, now);
    tracer.phases().close(id, now);
}

}  // namespace

int push(std::string_view name) {
    const PhaseId parent = t_stack.empty() ? PhaseId{} : t_stack.back();
    PhaseId id;
    try {
        id = addPhase(name, parent);
    } catch (...) {
        // Not recorded; still pushed below so that pops stay paired.
    }
    try {
        t_stack.push_back(id);
        return static_cast<int>(t_stack.size()) - 1;
    } catch (...) {
        return -1;
    }
}

int pop() {
    if (t_stack.empty()) return -1;  // unbalanced pop: NVTX's own answer
    const PhaseId id = t_stack.back();
    t_stack.pop_back();
    try {
        endPhase(id);
    } catch (...) {
    }
    return static_cast<int>(t_stack.size());
}

uint64_t start(std::string_view name) {
    try {
        // Start/end ranges may end on another thread: no parent, no nesting.
        return addPhase(name, PhaseId{}).value;
    } catch (...) {
        return 0;
    }
}

void end(uint64_t range_id) {
    if (range_id == 0 || range_id > UINT32_MAX) return;
    try {
        endPhase(PhaseId{static_cast<uint32_t>(range_id)});
    } catch (...) {
    }
}

void mark(std::string_view name) {
    try {
        Tracer::Use use(Tracer::instance());
        BackgroundTraceWriter* writer = use.writer();
        if (!writer) return;
        Annotation annotation;
        annotation.time = cuptiNowNs();
        annotation.name = writer->internString(name);
        annotation.stage = AnnotationStage::Instant;
        writer->addAnnotation(annotation);
    } catch (...) {
    }
}

}  // namespace memscope::cupti::nvtx
