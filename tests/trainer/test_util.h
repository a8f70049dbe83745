#pragma once
// Shared helpers for the trainer tests: small configurations and a run that
// records into a temporary trace and loads it back through core.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "analysis.h"
#include "config.h"
#include "trainer.h"

namespace memscope::trainer::test {

inline ModelConfig smallMlp(int64_t layers = 3) {
    ModelConfig m;
    m.kind = ModelKind::Mlp;
    m.layers = layers, m.hidden = 32, m.seq = 16, m.batch = 2;
    return m;
}

inline ModelConfig smallGpt(DType dtype = DType::Float32) {
    ModelConfig m;
    m.kind = ModelKind::Gpt;
    m.layers = 3, m.hidden = 32, m.heads = 4, m.seq = 32, m.batch = 2, m.vocab = 64;
    m.dropout = 0.1;
    m.dtype = dtype;
    return m;
}

inline TrainConfig trainConfig(const ModelConfig& m, int steps = 3) {
    TrainConfig c;
    c.model = m;
    c.steps = steps;
    c.seed = 42;
    c.lr = 1e-3;
    return c;
}

struct Recorded {
    RunResult run;
    LoadedTrace trace;
};

// A trace file of the trainer tests' own, in one folder under the system's temp.
inline std::string scratchTrace(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / "memscope-trainer-test";
    std::filesystem::create_directories(dir);
    return (dir / (name + ".memscope")).string();
}

inline std::string tracePath(const TrainConfig& c, const Policy& p, const std::string& tag) {
    return scratchTrace(tag + "-" + std::string(modelName(c.model.kind)) + "-" + policyName(p));
}

// Runs and records; fails the calling test (via ADD_FAILURE) on error.
inline std::optional<Recorded> record(const TrainConfig& c, const Policy& p,
                                      const std::string& tag) {
    RunOptions o;
    o.trace_path = tracePath(c, p, tag);
    o.preset = "test";
    auto run = runPolicy(c, p, o);
    if (!run) {
        ADD_FAILURE() << run.message();
        return std::nullopt;
    }
    auto loaded = loadTrace(o.trace_path);
    if (!loaded) {
        ADD_FAILURE() << loaded.message();
        return std::nullopt;
    }
    return Recorded{std::move(run.value()), std::move(loaded.value())};
}

inline Policy full() {
    return {Recompute::None, false};
}
inline Policy block() {
    return {Recompute::Block, false};
}
inline Policy selective() {
    return {Recompute::Selective, false};
}
inline Policy optInBwd() {
    return {Recompute::None, true};
}

}  // namespace memscope::trainer::test
