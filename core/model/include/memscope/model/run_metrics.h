#pragma once
// What a producer measured about the run besides memory: the checkpoint policy,
// the model's shape, and per-step wall times. A typed record, persisted by the
// native format (docs/FORMAT.md, chunk type 12), so that front ends read
// figures instead of guessing them from free-form metadata keys.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memscope {

struct ModelShape {
    std::string name;         // "mlp", "gpt"
    std::string description;  // "d=1024, 24 blocks, batch 8, seq 512"
    std::string dtype;        // "float32"
    int32_t layers = 0;
    int32_t hidden = 0;
    int32_t heads = 0;
    int32_t seq = 0;
    int32_t batch = 0;
    int32_t vocab = 0;
    double dropout = 0;
    friend bool operator==(const ModelShape&, const ModelShape&) = default;
};

struct RunMetrics {
    std::string policy;  // the checkpoint policy, "" when the producer has none
    std::optional<ModelShape> model;
    // Per training step, in order, the first (warm-up) step included.
    std::vector<int64_t> step_ns;       // wall time of the step
    std::vector<int64_t> recompute_ns;  // time spent recomputing within the step
    std::vector<double> losses;
    friend bool operator==(const RunMetrics&, const RunMetrics&) = default;

    // Mean step time in seconds, leaving out the first (warm-up) step when
    // there are others, as the trainer's own report does.
    std::optional<double> meanStepSeconds() const;
    // Recompute time as a fraction of step time over the same steps.
    std::optional<double> recomputeFraction() const;
};

}  // namespace memscope
