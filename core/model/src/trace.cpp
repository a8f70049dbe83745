#include "memscope/model/trace.h"

#include <algorithm>
#include <cstdint>

namespace memscope {
namespace {

size_t mix(size_t h, uint64_t v) {
    // splitmix-style combine: cheap and good enough for interning tables.
    v += 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
    v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
    return size_t(v ^ (v >> 31));
}

size_t hashFrames(std::span<const FrameId> frames) {
    // One multiply per frame (a snapshot's stacks are dozens deep and every
    // trace entry brings one), the full mix once at the end.
    uint64_t h = frames.size();
    for (FrameId f : frames) h = (((h << 5) | (h >> 59)) ^ f.value) * 0x9e3779b97f4a7c15ull;
    return mix(h, frames.size());
}

}  // namespace

const std::pair<std::string, std::string>* TraceMetadata::find(std::string_view key) const {
    constexpr size_t kScanBelow = 32;
    if (properties.size() < kScanBelow) {
        for (const auto& p : properties)
            if (p.first == key) return &p;
        return nullptr;
    }
    auto valid = [&] {
        // Direct edits of `properties` since the index was built show as a
        // shorter list or a key no longer where the index has it.
        if (indexed_ > properties.size()) return false;
        for (size_t i : {size_t(0), indexed_ / 2, indexed_ ? indexed_ - 1 : 0})
            if (i < indexed_) {
                auto it = property_index_.find(properties[i].first);
                if (it == property_index_.end() || it->second != i) return false;
            }
        return true;
    };
    if (!valid()) {
        property_index_.clear();
        indexed_ = 0;
    }
    for (; indexed_ < properties.size(); ++indexed_)
        property_index_.try_emplace(properties[indexed_].first, indexed_);
    auto it = property_index_.find(key);
    if (it == property_index_.end()) return nullptr;
    if (it->second < properties.size() && properties[it->second].first == key)
        return &properties[it->second];
    // Edited behind the index: rebuild once.
    property_index_.clear();
    indexed_ = 0;
    for (const auto& p : properties)
        if (p.first == key) return &p;
    return nullptr;
}

const std::string* TraceMetadata::property(std::string_view key) const {
    const auto* p = find(key);
    return p ? &p->second : nullptr;
}

void TraceMetadata::setProperty(std::string key, std::string value) {
    if (const auto* p = find(key)) {
        const_cast<std::pair<std::string, std::string>*>(p)->second = std::move(value);
        return;
    }
    properties.emplace_back(std::move(key), std::move(value));
}

size_t Trace::FrameHash::operator()(const Frame& f) const {
    return mix(mix(f.function.value, f.file.value), f.line);
}

FrameId Trace::internFrame(const Frame& frame) {
    auto [it, inserted] = frame_index_.try_emplace(frame, uint32_t(frames_.size() + 1));
    if (inserted) frames_.push_back(frame);
    return FrameId(it->second);
}

const Frame& Trace::frame(FrameId id) const {
    static const Frame kEmpty{};
    return id.value >= 1 && id.value <= frames_.size() ? frames_[id.value - 1] : kEmpty;
}

void Trace::growStackSlots() {
    std::vector<uint64_t> old = std::move(stack_slots_);
    stack_slots_.assign(std::max<size_t>(64, old.size() * 2), 0);
    const size_t mask = stack_slots_.size() - 1;
    for (uint64_t slot : old) {
        if (!slot) continue;
        size_t at = size_t(slot >> 32) & mask;
        while (stack_slots_[at]) at = (at + 1) & mask;
        stack_slots_[at] = slot;
    }
}

StackId Trace::internStack(std::span<const FrameId> frames) {
    if (frames.empty()) return StackId(0);
    if (2 * (stack_slot_count_ + 1) > stack_slots_.size()) growStackSlots();
    const auto tag = uint32_t(hashFrames(frames) >> 32);
    const size_t mask = stack_slots_.size() - 1;
    size_t at = size_t(tag) & mask;
    for (; stack_slots_[at]; at = (at + 1) & mask) {
        const uint64_t slot = stack_slots_[at];
        if (uint32_t(slot >> 32) != tag) continue;
        const auto existing = stack(StackId(uint32_t(slot) - 1));
        if (std::equal(existing.begin(), existing.end(), frames.begin(), frames.end()))
            return StackId(uint32_t(slot) - 1);
    }
    const auto id = uint32_t(stack_offsets_.size() - 1);
    stack_frames_.insert(stack_frames_.end(), frames.begin(), frames.end());
    stack_offsets_.push_back(uint32_t(stack_frames_.size()));
    stack_slots_[at] = (uint64_t(tag) << 32) | (uint64_t(id) + 1);
    ++stack_slot_count_;
    return StackId(id);
}

std::span<const FrameId> Trace::stack(StackId id) const {
    if (id.value + 1 >= stack_offsets_.size()) return {};
    const uint32_t begin = stack_offsets_[id.value];
    const uint32_t end = stack_offsets_[id.value + 1];
    return std::span<const FrameId>(stack_frames_).subspan(begin, end - begin);
}

uint32_t Trace::internStream(uint64_t stream) {
    auto [it, inserted] = stream_index_.try_emplace(stream, uint32_t(streams.size()));
    if (inserted) streams.push_back(stream);
    return it->second;
}

PhaseId Trace::addPhase(const Phase& phase) {
    phases.push_back(phase);
    return PhaseId(uint32_t(phases.size()));
}

const Phase* Trace::phase(PhaseId id) const {
    return id.value >= 1 && id.value <= phases.size() ? &phases[id.value - 1] : nullptr;
}

std::vector<int16_t> Trace::devices() const {
    // A flag per possible ordinal: one cheap pass over millions of events.
    std::vector<bool> seen(size_t(1) << 16);
    auto mark = [&](int16_t d) { seen[size_t(uint16_t(d))] = true; };
    for (const Event& e : events) mark(e.device);
    if (allocator_state)
        for (const Segment& s : allocator_state->segments) mark(s.device);
    std::vector<int16_t> out;
    for (int d = INT16_MIN; d <= INT16_MAX; ++d)
        if (seen[size_t(uint16_t(int16_t(d)))]) out.push_back(int16_t(d));
    return out;
}

}  // namespace memscope
