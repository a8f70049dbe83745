// The run metrics the trainer records as the trace's typed record: policy,
// model shape and per-step figures, read back through core's native reader;
// the metadata keeps only what the record does not hold.

#include <gtest/gtest.h>

#include "memscope/base/cpu_set.h"
#include "test_util.h"

using namespace memscope;
using namespace memscope::trainer;
using namespace memscope::trainer::test;

TEST(TrainerMetrics, RoundTripThroughTheTrace) {
    const ModelConfig m = smallGpt();
    const TrainConfig c = trainConfig(m, 3);
    auto rec = record(c, block(), "metrics");
    ASSERT_TRUE(rec);
    const Trace& t = *rec->trace.trace;
    ASSERT_TRUE(t.metrics.has_value());
    const RunMetrics& metrics = *t.metrics;
    EXPECT_EQ(metrics.policy, "block");
    EXPECT_EQ(metrics.step_ns, rec->run.step_ns);
    EXPECT_EQ(metrics.recompute_ns, rec->run.recompute_ns);
    EXPECT_EQ(metrics.losses, rec->run.losses);
    EXPECT_EQ(metrics.step_ns.size(), 3u);
    ASSERT_TRUE(metrics.meanStepSeconds());
    EXPECT_GT(*metrics.meanStepSeconds(), 0.0);
    ASSERT_TRUE(metrics.recomputeFraction());
    EXPECT_GT(*metrics.recomputeFraction(), 0.0) << "block recomputes every block";

    ASSERT_TRUE(metrics.model.has_value());
    const ModelShape& shape = *metrics.model;
    EXPECT_EQ(shape.name, "gpt");
    EXPECT_EQ(shape.description, describe(m));
    EXPECT_EQ(shape.dtype, "float32");
    EXPECT_EQ(shape.layers, m.layers);
    EXPECT_EQ(shape.hidden, m.hidden);
    EXPECT_EQ(shape.heads, m.heads);
    EXPECT_EQ(shape.seq, m.seq);
    EXPECT_EQ(shape.batch, m.batch);
    EXPECT_EQ(shape.vocab, m.vocab);
    EXPECT_EQ(shape.dropout, m.dropout);

    // What the record holds is not duplicated as properties; the rest stays.
    for (const char* key :
         {"policy", "model", "config", "layers", "hidden", "heads", "seq", "batch", "vocab",
          "dropout", "dtype", "step_times_ms", "recompute_ms", "losses"})
        EXPECT_EQ(t.metadata.property(key), nullptr) << key;
    for (const char* key : {"source", "preset", "device", "memory_device", "steps", "seed",
                            "optimizer", "torch_version", "unmatched_frees"})
        EXPECT_NE(t.metadata.property(key), nullptr) << key;
    EXPECT_EQ(*t.metadata.property("steps"), "3");
    // Where the recording's threads ran, when they could be kept off the
    // training thread's core (it may use more than one CPU).
    if (rec->run.recorder_cpus.empty()) {
        EXPECT_EQ(t.metadata.property("recorder_cpus"), nullptr);
    } else {
        ASSERT_NE(t.metadata.property("recorder_cpus"), nullptr);
        EXPECT_EQ(*t.metadata.property("recorder_cpus"), rec->run.recorder_cpus.toString());
    }
    if (CpuSet::ofCallingThread().size() > 1) {
        EXPECT_FALSE(rec->run.recorder_cpus.empty());
    }
}

TEST(TrainerMetrics, FullPolicyIsTheCompareBaseline) {
    // memscope's compare picks the run whose metrics say "full" as baseline.
    auto rec = record(trainConfig(smallMlp(), 2), full(), "metrics");
    ASSERT_TRUE(rec);
    const Trace& t = *rec->trace.trace;
    ASSERT_TRUE(t.metrics.has_value());
    EXPECT_EQ(t.metrics->policy, "full");
    ASSERT_TRUE(t.metrics->model.has_value());
    EXPECT_EQ(t.metrics->model->name, "mlp");
    ASSERT_TRUE(t.metrics->recomputeFraction());
    EXPECT_EQ(*t.metrics->recomputeFraction(), 0.0);
}
