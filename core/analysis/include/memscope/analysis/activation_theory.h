#pragma once
// Theory next to measurement: the activation bytes each layer of a labelled
// training run (memscope-train's) keeps at the end of forward, against what
// the literature predicts for the run's checkpointing policy:
//  - Korthikanti et al. 2022, per transformer layer, 16-bit tensors and
//    1-byte dropout masks: no recomputation s·b·h·(34 + 5·a·s/h), selective
//    recomputation 34·s·b·h, full recomputation 2·s·b·h (only the input);
//  - Chen et al. 2016: checkpointed segments of ceil(sqrt(L)) layers keep
//    only each segment's input, O(sqrt(L)) of them.
// The formulas are generalized to the element size e (REFERENCES.md §4: in
// fp32 every non-mask term doubles). One definition for the trainer's tests,
// its benchmark, `memscope-cli summary` and the GUI's theory charts.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/analysis/checkpoint_policy.h"
#include "memscope/base/result.h"
#include "memscope/model/run_metrics.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

enum class ActivationFormula : uint8_t {
    None,                  // no published per-layer formula for this model and policy
    KorthikantiFull,       // s·b·h·(34 + 5·a·s/h)
    KorthikantiSelective,  // 34·s·b·h
    KorthikantiInput,      // 2·s·b·h: a checkpointed layer keeps its input only
    ChenSegments,          // 2·s·b·h at the end of each checkpointed segment
};
// The formula as published (16-bit), e.g. "s·b·h·(34 + 5·a·s/h)".
std::string_view formulaText(ActivationFormula formula);
// Who published it: "Korthikanti et al. 2022", "Chen et al. 2016", "".
std::string_view formulaSource(ActivationFormula formula);

// Bytes per gpt layer by a Korthikanti formula, generalized to element size
// e: with 1-byte masks,
//   full:      e·(16·sbh + 2·as²b) + (2·sbh + as²b)   (= sbh(34 + 5as/h) for e = 2)
//   selective: e·16·sbh + 2·sbh                       (= 34·sbh)
//   input:     e·sbh                                  (= 2·sbh)
// Without dropout the mask terms go. 0 for None and ChenSegments (per segment,
// not per layer: see activationTheory).
double gptLayerBytes(const ModelShape& shape, ActivationFormula formula, double element_bytes);

// Bytes per element of a run's dtype name ("float32": 4, "bfloat16" and
// "float16": 2); nullopt for names it does not know.
std::optional<int> elementBytes(std::string_view dtype);

struct LayerActivation {
    int32_t layer = 0;
    int64_t measured = 0;             // bytes alive at the end of forward, allocated in the layer
    std::optional<double> predicted;  // nullopt where no formula applies
    ActivationFormula formula = ActivationFormula::None;
};

struct ActivationTheory {
    std::string policy;  // the run's, e.g. "sqrt+opt-in-bwd"
    std::string model;   // "gpt", "mlp"
    int32_t step = -1;   // the training step measured: the last with a forward
    int element_bytes = 0;
    std::vector<LayerActivation> layers;    // one per layer, in order
    int64_t outside_layers = 0;             // embedding, head and loss: no formula
    int64_t measured_total = 0;             // over the layers
    std::optional<double> predicted_total;  // when every layer has a prediction
    // The formula most layers follow (the chart's legend); None if none does.
    ActivationFormula main_formula = ActivationFormula::None;
    // Every formula some layer follows, in layer order (checkpoint_sequential
    // mixes checkpointed segments with a plain one).
    std::vector<ActivationFormula> formulas;
    // The formulas' text joined with " + ", "" when none applies.
    std::string formulasText() const;

    // measured_total / predicted_total, when there is a prediction.
    std::optional<double> ratio() const;
};

// Activation bytes alive when step `step`'s forward ends, by the layer
// (PhaseKind::Block phase) that allocated them; -1 collects what no layer
// did. Only recorded categories count: theory compares a run's labels.
std::vector<std::pair<int32_t, int64_t>> activationBytesByLayer(const Trace& trace,
                                                                const DeviceTimeline& device,
                                                                int32_t step);

// The comparison for a run of memscope-train (a trace with RunMetrics holding
// the policy and the model's shape). An error says why a trace has none: no
// model shape, a policy or dtype it does not know, no forward phase.
Result<ActivationTheory> activationTheory(const Trace& trace, const DeviceTimeline& device);

}  // namespace memscope
