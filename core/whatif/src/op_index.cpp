#include "memscope/whatif/op_index.h"

#include <algorithm>
#include <array>
#include <map>

#include "memscope/model/op_attribution.h"
#include "memscope/model/phases.h"
#include "memscope/whatif/op_labels.h"

namespace memscope {
namespace {

// torch.utils.checkpoint users name these in their save lists; the trainer's
// "matmul" and "attention" stand for them. Not aten::matmul or aten::linear:
// they are composite (CompositeImplicitAutograd), so a selective policy never
// sees them, only the ops they call (mm, addmm, bmm, and the copies a
// reshape makes, which are recomputed).
constexpr std::array<std::string_view, 11> kMatmulOps = {
    "aten::mm",     "aten::addmm", "aten::bmm", "aten::baddbmm",    "aten::addbmm",
    "aten::addmv",  "aten::mv",    "aten::dot", "aten::_scaled_mm", "aten::_addmm_activation",
    "aten::_int_mm"};
constexpr std::array<std::string_view, 9> kAttentionOps = {
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_attention_math",
    "aten::_scaled_dot_product_fused_attention_overrideable",
    "aten::_flash_attention_forward",
    "aten::_efficient_attention_forward"};

template <size_t N>
bool among(const std::array<std::string_view, N>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

bool contains(const OpRun& outer, const OpRun& inner) {
    return inner.start >= outer.start && inner.end <= outer.end;
}

// Time covered by the spans of `calls` (sorted by start) lying in [start, end).
int64_t coveredTime(const std::vector<OpRun>& calls, int64_t start, int64_t end) {
    int64_t total = 0, covered_to = start;
    for (const OpRun& c : calls) {
        if (c.start < start || c.end > end) continue;
        const int64_t from = std::max(c.start, covered_to);
        if (c.end > from) total += c.end - from;
        covered_to = std::max(covered_to, c.end);
    }
    return std::min(total, end - start);
}

}  // namespace

uint32_t opKindOfAtenName(std::string_view name) {
    if (among(kMatmulOps, name)) return kSaveMatmul;
    if (among(kAttentionOps, name)) return kSaveAttention;
    return 0;
}

std::vector<std::string_view> atenNamesOfKind(SaveOp kind) {
    if (kind == kSaveMatmul) return {kMatmulOps.begin(), kMatmulOps.end()};
    if (kind == kSaveAttention) return {kAttentionOps.begin(), kAttentionOps.end()};
    return {};
}

bool isSoftmaxOp(std::string_view name) {
    return name == "aten::softmax" || name == "aten::_softmax" || name == "aten::_safe_softmax";
}

bool isAttentionMatmulOp(std::string_view name) {
    return name == "aten::bmm" || name == "aten::matmul" || name == "aten::mm" ||
           name == "aten::baddbmm";
}

OpSelection OpSelection::of(const Policy& policy) {
    if (policy.recompute != Recompute::Save) return {};
    return {policy.save_ops, policy.save_op_names};
}

bool OpSelection::matches(std::string_view name, uint32_t kind) const {
    return (kind & kinds) != 0 || std::find(names.begin(), names.end(), name) != names.end();
}

OpIndex::OpIndex(const Trace& trace, int16_t device) : trace_(&trace), device_(device) {
    if (hasOpLabels(trace)) {
        source_ = OpIndexSource::Phases;
        for (const Phase& p : trace.phases) {
            if (p.kind != PhaseKind::Range || p.inferred || !phaseOnDevice(p, device)) continue;
            const uint32_t kind = opKindOfPhaseName(trace.string(p.name));
            if (kind) runs_.push_back({p.start, p.end, opLabel(SaveOp(kind)), kind, 0});
        }
    } else if (!trace.ops.scopes.empty()) {
        source_ = OpIndexSource::Recorded;
        attribution_ = OpAttribution(trace);
        for (const OpScope& s : trace.ops.scopes) {
            if (s.end <= s.start) continue;
            const std::string_view name = trace.string(s.name);
            runs_.push_back({s.start, s.end, name, opKindOfAtenName(name), s.depth});
        }
    } else if (!trace.ops.event_ops.empty()) {
        source_ = OpIndexSource::Inferred;
        // Consecutive allocations of one op are one call of it, lasting until
        // the next allocation another op (or none) made.
        const auto& ops = trace.ops.event_ops;
        std::optional<OpRun> open;
        for (size_t i = 0; i < trace.events.size() && i < ops.size(); ++i) {
            const Event& e = trace.events[i];
            if (e.kind != EventKind::Alloc || e.device != device) continue;
            const std::string_view name =
                ops[i].isNull() ? std::string_view() : trace.string(ops[i]);
            if (open && open->name == name && !name.empty()) {
                open->end = e.time + 1;
                continue;
            }
            if (open) {
                open->end = std::max(open->end, e.time);
                runs_.push_back(*open);
                open.reset();
            }
            if (!name.empty()) open = OpRun{e.time, e.time + 1, name, opKindOfAtenName(name), 0};
        }
        if (open) runs_.push_back(*open);
    }
    std::sort(runs_.begin(), runs_.end(), [](const OpRun& a, const OpRun& b) {
        if (a.start != b.start) return a.start < b.start;
        if (a.end != b.end) return a.end > b.end;
        return a.depth < b.depth;
    });
    if (source_ != OpIndexSource::Phases && runs_.empty()) source_ = OpIndexSource::None;
}

std::string_view OpIndex::describe() const {
    switch (source_) {
        case OpIndexSource::None:
            return "no ops";
        case OpIndexSource::Phases:
            return "the trace's op phases";
        case OpIndexSource::Recorded:
            return "recorded op scopes";
        case OpIndexSource::Inferred:
            return "ops inferred per allocation";
    }
    return "";
}

std::vector<OpRun> OpIndex::runsIn(int64_t start, int64_t end) const {
    std::vector<OpRun> out;
    auto it = std::lower_bound(runs_.begin(), runs_.end(), start,
                               [](const OpRun& r, int64_t t) { return r.start < t; });
    for (; it != runs_.end() && it->start < end; ++it)
        if (it->end <= end) out.push_back(*it);
    return out;
}

OpSelection OpIndex::resolve(const OpSelection& selection) const {
    if (source_ != OpIndexSource::Phases) return selection;
    OpSelection out{selection.kinds, {}};
    for (const std::string& name : selection.names) out.kinds |= opKindOfAtenName(name);
    return out;
}

std::vector<std::string> OpIndex::neverRan(const OpSelection& selection) const {
    std::vector<std::string> missing;
    for (SaveOp kind : {kSaveMatmul, kSaveAttention}) {
        if (!(selection.kinds & kind)) continue;
        if (std::none_of(runs_.begin(), runs_.end(),
                         [&](const OpRun& r) { return (r.kind & kind) != 0; }))
            missing.emplace_back(opLabel(kind));
    }
    for (const std::string& name : selection.names) {
        const uint32_t kind = source_ == OpIndexSource::Phases ? opKindOfAtenName(name) : 0;
        const bool ran = std::any_of(runs_.begin(), runs_.end(), [&](const OpRun& r) {
            return source_ == OpIndexSource::Phases ? (r.kind & kind) != 0 : r.name == name;
        });
        if (!ran) missing.push_back(name);
    }
    return missing;
}

std::optional<std::pair<std::string_view, uint32_t>> OpIndex::opOfEvent(uint64_t event,
                                                                        int64_t time) const {
    if (!trace_ || event >= trace_->events.size()) return std::nullopt;
    if (source_ == OpIndexSource::Phases) {
        const uint32_t kinds = opKindsAt(*trace_, trace_->events[event].phase);
        if (!kinds) return std::nullopt;
        const SaveOp kind = (kinds & kSaveMatmul) ? kSaveMatmul : kSaveAttention;
        return std::make_pair(opLabel(kind), kinds);
    }
    if (source_ == OpIndexSource::Inferred) {
        const auto& ops = trace_->ops.event_ops;
        if (event >= ops.size() || ops[event].isNull()) return std::nullopt;
        const std::string_view name = trace_->string(ops[event]);
        return std::make_pair(name, opKindOfAtenName(name));
    }
    // Recorded scopes: the innermost op running (allocation helpers looked
    // through), as a selective policy sees the op that returned the tensor.
    const auto hit = attribution_.at(time);
    if (!hit) return std::nullopt;
    const std::string_view name = trace_->string(hit->name);
    return std::make_pair(name, opKindOfAtenName(name));
}

std::vector<OpBytes> OpIndex::topAllocating(size_t n) const {
    if (!trace_) return {};
    std::map<std::string, uint64_t, std::less<>> bytes;
    for (uint64_t i = 0; i < trace_->events.size(); ++i) {
        const Event& e = trace_->events[i];
        if (e.kind != EventKind::Alloc || e.device != device_) continue;
        if (const auto op = opOfEvent(i, e.time)) bytes[std::string(op->first)] += e.size;
    }
    std::vector<OpBytes> out;
    for (auto& [name, b] : bytes) out.push_back({name, b});
    std::stable_sort(out.begin(), out.end(),
                     [](const OpBytes& a, const OpBytes& b) { return a.bytes > b.bytes; });
    if (out.size() > n) out.resize(n);
    return out;
}

OpIndex::Kept OpIndex::kept(const OpSelection& selection) const {
    Kept k;
    k.index_ = this;
    k.selection_ = resolve(selection);
    for (const OpRun& r : runs_) {
        if (!k.selection_.matches(r.name, r.kind)) continue;
        if (!k.calls_.empty() && contains(k.calls_.back(), r)) continue;  // called by a kept op
        k.calls_.push_back(r);
    }
    return k;
}

std::optional<OpRun> OpIndex::Kept::madeBy(uint64_t event, int64_t time) const {
    if (calls_.empty()) return std::nullopt;
    // The kept call holding `time`: the last to start at or before it.
    auto holding = [&]() -> std::optional<OpRun> {
        auto it = std::upper_bound(calls_.begin(), calls_.end(), time,
                                   [](int64_t t, const OpRun& r) { return t < r.start; });
        if (it == calls_.begin()) return std::nullopt;
        --it;
        if (time < it->end) return *it;
        return std::nullopt;
    };
    // The op that made it (for the trainer's phases, every kind its
    // enclosing phases name), over the call's span.
    const auto op = index_->opOfEvent(event, time);
    if (!op || !selection_.matches(op->first, op->second)) return std::nullopt;
    OpRun made{time, time + 1, op->first, op->second, 0};
    if (const auto call = holding()) made.start = call->start, made.end = call->end;
    return made;
}

int64_t OpIndex::Kept::timeIn(int64_t start, int64_t end) const {
    return coveredTime(calls_, start, end);
}

std::vector<OpRun> OpIndex::Kept::attentionIn(int64_t start, int64_t end) const {
    std::vector<OpRun> out;
    for (const OpRun& c : calls_)
        if ((c.kind & kSaveAttention) && c.start >= start && c.end <= end) out.push_back(c);
    return out;
}

}  // namespace memscope
