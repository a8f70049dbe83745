#include "nvtx_hook.h"

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "clock.h"
#include "log.h"
#include "phase_names.h"
#include "tracer.h"

namespace memscope::cupti::nvtx {
namespace {

// NVTX push/pop nest per thread; the parent of a pushed range is the range
// this thread pushed before it.
thread_local std::vector<PhaseId> t_stack;
// Named domains nest per thread and per domain: (domain, annotation name).
thread_local std::vector<std::pair<const char*, StringId>> t_domain_stack;

// Ids of started domain ranges carry the annotation's name, so that nothing
// has to be remembered between start and end (a range never ended costs
// nothing): bit 63 set, a counter in bits 32-62, the StringId below. Phase
// ids are below 2^32, so end() tells the two apart.
constexpr uint64_t kDomainRangeBit = uint64_t(1) << 63;
std::atomic<uint32_t> g_domain_ranges{0};

std::atomic<bool> g_said_cap{false};

// Interns `name` within the process's cap on distinct names (name_cap.h).
// The first name replaced leaves a Marker in the trace, once.
StringId internCapped(Tracer& tracer, BackgroundTraceWriter& writer, std::string_view name) {
    const NameCap::Admitted admitted = tracer.names().admit(name);
    if (admitted.first_cap) {
        Event marker;
        marker.kind = EventKind::Marker;
        marker.time = cuptiNowNs();
        const uint64_t index = writer.append(marker);
        writer.addAttribute(index, writer.internString("nvtx_name_cap_reached"),
                            writer.internString(std::to_string(tracer.names().maxNames())));
        MEMSCOPE_LOG_ONCE(g_said_cap,
                          "more than %zu distinct NVTX range names: new names are recorded by "
                          "their prefix (the text before ',' or '(') from now on",
                          tracer.names().maxNames());
    }
    return writer.internString(admitted.name);
}

PhaseId addPhase(std::string_view name, PhaseId parent) {
    Tracer& tracer = Tracer::instance();
    Tracer::Use use(tracer);
    BackgroundTraceWriter* writer = use.writer();
    if (!writer) return PhaseId{};
    // Kind and step from the full name, also when the name itself is capped.
    const PhaseGuess guess = classifyPhaseName(name);
    Phase phase;
    phase.name = internCapped(tracer, *writer, name);
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

std::string domainName(const char* domain, std::string_view message) {
    std::string name = domain ? domain : "";
    if (name.empty()) return std::string(message);
    if (!message.empty()) name.append(": ").append(message);
    return name;
}

// An annotation named `name` (interned within the cap), or by an id already
// interned when `name` is null. Returns its name's id (null when not recorded).
StringId annotate(AnnotationStage stage, const std::string* name, StringId id = StringId{}) {
    Tracer& tracer = Tracer::instance();
    Tracer::Use use(tracer);
    BackgroundTraceWriter* writer = use.writer();
    if (!writer) return StringId{};
    Annotation annotation;
    annotation.time = cuptiNowNs();
    annotation.name = name ? internCapped(tracer, *writer, *name) : id;
    annotation.stage = stage;
    writer->addAnnotation(annotation);
    return annotation.name;
}

int domainDepth(const char* domain) {
    int depth = 0;
    for (const auto& entry : t_domain_stack) depth += entry.first == domain;
    return depth;
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
    try {
        if (range_id & kDomainRangeBit) {
            const StringId name{static_cast<uint32_t>(range_id)};
            if (!name.isNull()) annotate(AnnotationStage::End, nullptr, name);
            return;
        }
        if (range_id == 0 || range_id > UINT32_MAX) return;
        endPhase(PhaseId{static_cast<uint32_t>(range_id)});
    } catch (...) {
    }
}

void mark(std::string_view name) {
    try {
        const std::string text(name);
        annotate(AnnotationStage::Instant, &text);
    } catch (...) {
    }
}

int domainPush(const char* domain, std::string_view message) {
    StringId name;
    try {
        const std::string text = domainName(domain, message);
        name = annotate(AnnotationStage::Start, &text);
    } catch (...) {
        // Not recorded; still pushed below so that pops stay paired.
    }
    try {
        const int depth = domainDepth(domain);
        t_domain_stack.emplace_back(domain, name);
        return depth;
    } catch (...) {
        return -1;
    }
}

int domainPop(const char* domain) {
    for (auto it = t_domain_stack.rbegin(); it != t_domain_stack.rend(); ++it) {
        if (it->first != domain) continue;
        const StringId name = it->second;
        t_domain_stack.erase(std::next(it).base());
        try {
            if (!name.isNull()) annotate(AnnotationStage::End, nullptr, name);
        } catch (...) {
        }
        return domainDepth(domain);
    }
    return -1;  // unbalanced pop
}

uint64_t domainStart(const char* domain, std::string_view message) {
    try {
        const std::string text = domainName(domain, message);
        const StringId name = annotate(AnnotationStage::Start, &text);
        if (name.isNull()) return 0;
        const uint64_t serial =
            g_domain_ranges.fetch_add(1, std::memory_order_relaxed) & 0x7fffffff;
        return kDomainRangeBit | (serial << 32) | name.value;
    } catch (...) {
        return 0;
    }
}

void domainMark(const char* domain, std::string_view message) {
    try {
        const std::string text = domainName(domain, message);
        annotate(AnnotationStage::Instant, &text);
    } catch (...) {
    }
}

}  // namespace memscope::cupti::nvtx
