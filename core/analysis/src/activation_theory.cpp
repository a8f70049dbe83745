#include "memscope/analysis/activation_theory.h"

#include <algorithm>
#include <map>

#include "memscope/model/phases.h"

namespace memscope {
namespace {

// A run's model shape comes from its file: a hostile one must not make the
// per-layer table (and the segment plan) allocate billions of entries.
constexpr int32_t kMaxTheoryLayers = 1 << 16;

// The layer of the innermost Block phase enclosing `phase`, or -1 (a bounded
// walk, as phaseWithin's: a corrupt parent cycle ends it).
int32_t layerOf(const Trace& trace, PhaseId phase) {
    for (int guard = 0; !phase.isNull() && guard < 64; ++guard) {
        const Phase* p = trace.phase(phase);
        if (!p) return -1;
        if (p->kind == PhaseKind::Block) return p->block;
        phase = p->parent;
    }
    return -1;
}

int32_t lastForwardStep(const Trace& trace) {
    int32_t last = -1;
    for (const Phase& p : trace.phases)
        if (p.kind == PhaseKind::Forward && !p.inferred) last = std::max(last, p.step);
    return last;
}

// What a layer of a plain (not checkpointed) segment keeps, by policy.
ActivationFormula plainLayerFormula(std::string_view model, Recompute recompute) {
    if (model != "gpt") return ActivationFormula::None;  // the paper's layer is a transformer's
    if (recompute == Recompute::Selective) return ActivationFormula::KorthikantiSelective;
    return ActivationFormula::KorthikantiFull;
}

}  // namespace

std::string_view formulaText(ActivationFormula formula) {
    switch (formula) {
        case ActivationFormula::None:
            return "";
        case ActivationFormula::KorthikantiFull:
            return "s·b·h·(34 + 5·a·s/h)";
        case ActivationFormula::KorthikantiSelective:
            return "34·s·b·h";
        case ActivationFormula::KorthikantiInput:
            return "2·s·b·h";
        case ActivationFormula::ChenSegments:
            return "2·s·b·h per checkpointed segment";
    }
    return "";
}

std::string_view formulaSource(ActivationFormula formula) {
    switch (formula) {
        case ActivationFormula::None:
            return "";
        case ActivationFormula::KorthikantiFull:
        case ActivationFormula::KorthikantiSelective:
        case ActivationFormula::KorthikantiInput:
            return "Korthikanti et al. 2022";
        case ActivationFormula::ChenSegments:
            return "Chen et al. 2016";
    }
    return "";
}

double gptLayerBytes(const ModelShape& m, ActivationFormula formula, double e) {
    const double s = m.seq, b = m.batch, h = m.hidden, a = m.heads;
    const double sbh = s * b * h, as2b = a * s * s * b;
    const double masks = m.dropout > 0.0 ? 1.0 : 0.0;
    switch (formula) {
        case ActivationFormula::KorthikantiFull:
            return e * (16 * sbh + 2 * as2b) + masks * (2 * sbh + as2b);
        case ActivationFormula::KorthikantiSelective:
            return e * 16 * sbh + masks * 2 * sbh;
        case ActivationFormula::KorthikantiInput:
            return e * sbh;
        case ActivationFormula::None:
        case ActivationFormula::ChenSegments:
            return 0;
    }
    return 0;
}

std::optional<int> elementBytes(std::string_view dtype) {
    if (dtype == "float32" || dtype == "fp32") return 4;
    if (dtype == "bfloat16" || dtype == "bf16" || dtype == "float16" || dtype == "fp16") return 2;
    return std::nullopt;
}

std::optional<double> ActivationTheory::ratio() const {
    if (!predicted_total || *predicted_total <= 0) return std::nullopt;
    return static_cast<double>(measured_total) / *predicted_total;
}

std::string ActivationTheory::formulasText() const {
    std::string text;
    for (ActivationFormula f : formulas) {
        if (!text.empty()) text += " + ";
        text += formulaText(f);
    }
    return text;
}

std::vector<std::pair<int32_t, int64_t>> activationBytesByLayer(const Trace& trace,
                                                                const DeviceTimeline& device,
                                                                int32_t step) {
    std::map<int32_t, int64_t> by_layer;
    const auto forward = findPhase(trace, PhaseKind::Forward, step);
    if (!forward) return {};
    const int64_t end = trace.phase(*forward)->end;
    for (const AllocationInterval& iv : device.intervals) {
        if (iv.category != Category::Activation || iv.category_inferred || iv.start > end) continue;
        if (iv.free_event != kNoEvent && iv.end <= end) continue;
        if (!phaseWithin(trace, iv.phase, *forward)) continue;
        by_layer[layerOf(trace, iv.phase)] += static_cast<int64_t>(iv.size);
    }
    return {by_layer.begin(), by_layer.end()};
}

Result<ActivationTheory> activationTheory(const Trace& trace, const DeviceTimeline& device) {
    if (!trace.metrics || !trace.metrics->model)
        return makeError(
            "no model shape in this trace: activation theory needs a run of memscope-train");
    const RunMetrics& metrics = *trace.metrics;
    const ModelShape& shape = *metrics.model;
    auto policy = parsePolicy(metrics.policy);
    if (!policy) return makeError("policy '" + metrics.policy + "': " + policy.message());
    const auto e = elementBytes(shape.dtype);
    if (!e) return makeError("dtype '" + shape.dtype + "' has no known element size");
    if (shape.layers <= 0) return makeError("the model has no layers");
    if (shape.layers > kMaxTheoryLayers)
        return makeError("the model has " + std::to_string(shape.layers) +
                         " layers, more than the " + std::to_string(kMaxTheoryLayers) +
                         " a per-layer comparison takes");
    auto plan = segmentPlan(*policy, shape.layers);
    if (!plan) return plan.error();

    ActivationTheory t;
    t.policy = metrics.policy;
    t.model = shape.name;
    t.element_bytes = *e;
    t.step = lastForwardStep(trace);
    if (t.step < 0) return makeError("no recorded forward phase to measure");

    t.layers.resize(static_cast<size_t>(shape.layers));
    for (int32_t i = 0; i < shape.layers; ++i) t.layers[static_cast<size_t>(i)].layer = i;
    // A checkpointed segment keeps only its input, which the layer before it
    // produced: the trainer attributes it there, so the prediction sits on
    // each segment's last layer. Save lists keep more (op outputs) and have no
    // published formula.
    const bool save_list = policy->recompute == Recompute::Save && policy->save_ops != 0;
    const ActivationFormula kept =
        policy->recompute == Recompute::Sqrt || policy->recompute == Recompute::Segments
            ? ActivationFormula::ChenSegments
            : ActivationFormula::KorthikantiInput;
    const double input_bytes =
        gptLayerBytes(shape, ActivationFormula::KorthikantiInput, *e);  // e·s·b·h
    for (const CheckpointSegment& seg : *plan) {
        for (int64_t i = seg.begin; i < seg.end; ++i) {
            LayerActivation& layer = t.layers[static_cast<size_t>(i)];
            if (seg.checkpointed) {
                if (save_list) continue;
                layer.formula = kept;
                layer.predicted = i + 1 == seg.end ? input_bytes : 0.0;
            } else {
                layer.formula = plainLayerFormula(shape.name, policy->recompute);
                if (layer.formula != ActivationFormula::None)
                    layer.predicted = gptLayerBytes(shape, layer.formula, *e);
            }
        }
    }
    for (const auto& [layer, bytes] : activationBytesByLayer(trace, device, t.step)) {
        if (layer >= 0 && layer < shape.layers)
            t.layers[static_cast<size_t>(layer)].measured = bytes;
        else
            t.outside_layers += bytes;
    }
    double predicted = 0;
    bool all_predicted = true;
    std::map<ActivationFormula, int> votes;
    for (const LayerActivation& l : t.layers) {
        t.measured_total += l.measured;
        if (l.predicted)
            predicted += *l.predicted;
        else
            all_predicted = false;
        ++votes[l.formula];
        if (l.formula != ActivationFormula::None &&
            std::find(t.formulas.begin(), t.formulas.end(), l.formula) == t.formulas.end())
            t.formulas.push_back(l.formula);
    }
    if (all_predicted) t.predicted_total = predicted;
    int best = 0;
    for (const auto& [formula, count] : votes)
        if (formula != ActivationFormula::None && count > best)
            best = count, t.main_formula = formula;
    return t;
}

}  // namespace memscope
