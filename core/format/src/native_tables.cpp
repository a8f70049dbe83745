#include "native_tables.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace memscope::native {

size_t NativeTables::FrameHash::operator()(const Frame& f) const {
    uint64_t h = f.function.value;
    h = h * 0x9E3779B97F4A7C15ull ^ f.file.value;
    h = h * 0x9E3779B97F4A7C15ull ^ f.line;
    return static_cast<size_t>(h ^ (h >> 29));
}

NativeTables::NativeTables(TraceMetadata metadata) : metadata_(std::move(metadata)) {
    strings_.emplace(std::string(), 0);
    pending_.first_string = 1;  // "" is id 0 in every Trace: never written
    streams_.emplace(0, 0);
    pending_.metadata = metadata_;
}

StringId NativeTables::internString(std::string_view text) {
    if (auto it = strings_.find(text); it != strings_.end()) return StringId(it->second);
    const auto id = static_cast<uint32_t>(strings_.size());
    strings_.emplace(std::string(text), id);
    pending_.strings.emplace_back(text);
    return StringId(id);
}

StringId NativeTables::validString(StringId id) const {
    return id.value < strings_.size() ? id : StringId();
}

StackId NativeTables::validStack(StackId id) const {
    return id.value <= stacks_.size() ? id : StackId();
}

FrameId NativeTables::internFrame(const Frame& frame) {
    const Frame f{validString(frame.function), validString(frame.file), frame.line};
    if (auto it = frames_.find(f); it != frames_.end()) return FrameId(it->second);
    const auto id = static_cast<uint32_t>(frames_.size() + 1);
    frames_.emplace(f, id);
    pending_.frames.push_back(f);
    return FrameId(id);
}

StackId NativeTables::internStack(std::span<const FrameId> frames) {
    // Producers intern a stack per allocation: the common case (all frames
    // known) looks up the caller's span without copying it.
    const auto known = [&](FrameId f) { return f.value != 0 && f.value <= frames_.size(); };
    std::vector<FrameId> filtered;
    std::span<const FrameId> valid = frames;
    if (!std::all_of(frames.begin(), frames.end(), known)) {
        std::copy_if(frames.begin(), frames.end(), std::back_inserter(filtered), known);
        valid = filtered;
    }
    if (valid.empty()) return StackId();
    const std::string_view key(reinterpret_cast<const char*>(valid.data()),
                               valid.size() * sizeof(FrameId));
    if (auto it = stacks_.find(key); it != stacks_.end()) return StackId(it->second);
    const auto id = static_cast<uint32_t>(stacks_.size() + 1);
    stacks_.emplace(std::string(key), id);
    pending_.stack_sizes.push_back(static_cast<uint32_t>(valid.size()));
    pending_.stack_frames.insert(pending_.stack_frames.end(), valid.begin(), valid.end());
    return StackId(id);
}

uint32_t NativeTables::internStream(uint64_t stream) {
    if (auto it = streams_.find(stream); it != streams_.end()) return it->second;
    const auto index = static_cast<uint32_t>(streams_.size());
    streams_.emplace(stream, index);
    pending_.streams.push_back(stream);
    return index;
}

PhaseId NativeTables::addPhase(const Phase& phase) {
    Phase p = phase;
    p.name = validString(p.name);
    if (p.parent.value > phase_count_) p.parent = PhaseId();  // parents come first
    pending_.phases.push_back(p);
    return PhaseId(++phase_count_);
}

void NativeTables::endPhase(PhaseId id, int64_t end) {
    if (id.isNull() || id.value > phase_count_) return;
    pending_.phase_ends.emplace_back(id, end);
}

ModuleId NativeTables::addModule(const Module& module) {
    Module m = module;
    m.path = validString(m.path);
    m.root = validString(m.root);
    m.type = validString(m.type);
    if (m.parent.value > module_count_) m.parent = ModuleId();  // parents come first
    pending_.modules.push_back(m);
    return ModuleId(++module_count_);
}

void NativeTables::addModuleScope(const ModuleScope& scope) {
    // The reader drops a chunk whose scope names a module it has not read.
    if (scope.module.isNull() || scope.module.value > module_count_) return;
    if (static_cast<int>(scope.kind) >= kModuleScopeKindCount) return;
    pending_.module_scopes.push_back(scope);
}

void NativeTables::addOpScope(const OpScope& scope) {
    OpScope s = scope;
    s.name = validString(s.name);  // the reader drops a chunk naming an unknown string
    s.depth = std::min(s.depth, kMaxOpDepth);
    pending_.op_scopes.push_back(s);
}

void NativeTables::setModuleSource(ModuleSource source) {
    module_source_ = source;
    pending_.module_source = source;
    pending_.module_source_changed = true;
}

void NativeTables::addAnnotation(const Annotation& annotation) {
    Annotation a = annotation;
    a.name = validString(a.name);
    pending_.annotations.push_back(a);
}

void NativeTables::addAttribute(uint64_t event, StringId key, StringId value) {
    if (event >= event_count_) return;  // the reader accepts attributes of written events only
    pending_.attributes.push_back({event, validString(key), validString(value)});
}

void NativeTables::setProperty(std::string key, std::string value) {
    metadata_.setProperty(std::move(key), std::move(value));
    pending_.metadata = metadata_;
}

void NativeTables::setAllocatorState(const AllocatorState& state) {
    AllocatorState s = state;
    for (Segment& seg : s.segments) {
        seg.stack = validStack(seg.stack);
        if (seg.first_block > s.blocks.size() ||
            seg.block_count > s.blocks.size() - seg.first_block) {
            seg.first_block = 0;
            seg.block_count = 0;
        }
    }
    for (Block& b : s.blocks) b.stack = validStack(b.stack);
    pending_.allocator_state = std::move(s);
}

void NativeTables::setRunMetrics(const RunMetrics& metrics) {
    pending_.metrics = metrics;
}

void NativeTables::setPrediction(const Prediction& prediction) {
    pending_.prediction = prediction;
}

void NativeTables::setDigest(const DigestSection& digest) {
    pending_.digest = digest;
}

Event NativeTables::sanitize(const Event& event) const {
    Event e = event;
    sanitize(std::span(&e, 1));
    return e;
}

void NativeTables::sanitize(std::span<Event> events) const {
    const size_t stacks = stacks_.size(), streams = streams_.size();
    for (Event& e : events) {
        if (static_cast<int>(e.kind) >= kEventKindCount) e.kind = EventKind::Marker;
        if (static_cast<int>(e.category) >= kCategoryCount) e.category = Category::Unknown;
        if (e.stack.value > stacks) e.stack = StackId();
        if (e.phase.value > phase_count_) e.phase = PhaseId();
        if (e.stream >= streams) e.stream = 0;
    }
}

PendingTables NativeTables::takePending() {
    PendingTables taken = std::move(pending_);
    pending_ = PendingTables();
    pending_.first_string = static_cast<uint32_t>(strings_.size());
    pending_.first_frame = static_cast<uint32_t>(frames_.size() + 1);
    pending_.first_stack = static_cast<uint32_t>(stacks_.size() + 1);
    pending_.first_stream = static_cast<uint32_t>(streams_.size());
    pending_.first_phase = phase_count_ + 1;
    pending_.first_module = module_count_ + 1;
    pending_.module_source = module_source_;
    return taken;
}

}  // namespace memscope::native
