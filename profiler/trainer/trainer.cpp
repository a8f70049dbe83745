#include "trainer.h"

#include <ATen/Parallel.h>
#include <time.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>

#include "capture.h"
#include "cuda_snapshot.h"
#include "model.h"
#include "optimizer.h"
#include "run_context.h"
#include "torch_api.h"

namespace memscope::trainer {
namespace {

const void* storageOf(const at::Tensor& t) {
    return t.defined() && t.has_storage() ? t.storage().data() : nullptr;
}

TraceMetadata metadataFor(const TrainConfig& c, const Policy& p, const RunOptions& o) {
    TraceMetadata m;
    m.source_format = "memscope-train";
    m.name = std::string(modelName(c.model.kind)) + "-" + policyName(p);
    m.pid = static_cast<int64_t>(::getpid());
    m.rank = 0;
    // The policy, the model's shape and the per-step figures are the typed
    // run metrics (runMetrics), not properties.
    m.setProperty("source", "memscope-train");
    m.setProperty("preset", o.preset);
    m.setProperty("device", c.device);
    m.setProperty("memory_device", c.device == "cpu"
                                       ? "host allocations are device 0"
                                       : "host allocations are device -1, GPUs their ordinal");
    m.setProperty("steps", std::to_string(c.steps));
    m.setProperty("seed", std::to_string(c.seed));
    m.setProperty("optimizer", p.optimizer_in_backward ? "adam (in backward)" : "adam (foreach)");
    m.setProperty("torch_version", torchVersion());
    return m;
}

// The run metrics as far as the run got: written at the start, then at most
// once a second and after the last step, so that a killed run keeps the steps
// it finished up to a second before.
RunMetrics runMetrics(const TrainConfig& c, const Policy& p, const RunResult& r) {
    RunMetrics m;
    m.policy = policyName(p);
    ModelShape shape;
    shape.name = std::string(modelName(c.model.kind));
    shape.description = describe(c.model);
    shape.dtype = std::string(dtypeTorchName(c.model.dtype));
    // The command line keeps the sizes within int32 (config.cpp).
    shape.layers = static_cast<int32_t>(c.model.layers);
    shape.hidden = static_cast<int32_t>(c.model.hidden);
    shape.heads = static_cast<int32_t>(c.model.heads);
    shape.seq = static_cast<int32_t>(c.model.seq);
    shape.batch = static_cast<int32_t>(c.model.batch);
    shape.vocab = static_cast<int32_t>(c.model.vocab);
    shape.dropout = c.model.dropout;
    m.model = std::move(shape);
    m.step_ns = r.step_ns;
    m.recompute_ns = r.recompute_ns;
    m.losses = r.losses;
    return m;
}

// Dropout masks come from a generator of the run's own (never the global one),
// so that checkpointed regions can replay it; on CUDA a clone of the device's
// default generator, reseeded.
at::Generator dropoutGenerator(const at::Device& device, uint64_t seed) {
    if (device.is_cpu()) return at::make_generator<at::CPUGeneratorImpl>(seed);
    at::Generator g = at::globalContext().defaultGenerator(device).clone();
    std::lock_guard<std::mutex> lock(g.mutex());
    g.set_current_seed(seed);
    return g;
}

int64_t threadCpuNs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The body of a run; `writer`, `ledger` are null when not recording.
RunResult train(const TrainConfig& config, const Policy& policy, const RunOptions& options,
                BackgroundTraceWriter* writer, AllocationLedger* ledger) {
    RunResult result;
    result.policy = policy;
    result.trace_path = options.trace_path;
    const at::Device device(config.device);
    const bool cuda = device.is_cuda();
    auto sync = [&] {
        if (cuda) torch::cuda::synchronize();
    };

    if (writer) writer->setRunMetrics(runMetrics(config, policy, result));
    RunContext ctx(ledger);
    std::optional<CaptureScope> capture;
    if (ledger) capture.emplace(*ledger, CaptureOptions{!cuda, !cuda});
    if (cuda && !options.cuda_snapshot_path.empty()) {
        auto started = startCudaHistory();
        result.cuda_snapshot = started ? "" : started.message();
    }

    std::unique_ptr<Model> model;
    {
        PhaseScope setup(ctx, PhaseKind::Range, "setup");
        model = makeModel(config.model, config.seed, device);
        for (const auto& p : model->parameters()) ctx.tag(storageOf(p.tensor), Category::Parameter);
        // Model constants (the causal mask) count with the parameters, as in
        // the model's state.
        for (const auto& b : model->buffers()) ctx.tag(storageOf(b), Category::Parameter);
    }
    ctx.commit();

    Adam adam(model->parameters(), AdamOptions{config.lr, 0.9, 0.999, 1e-8}, ctx);
    if (policy.optimizer_in_backward) adam.runInBackward();
    at::Generator dropout = dropoutGenerator(device, config.seed + 1);

    int64_t metrics_at = ctx.now();  // when the writer last got the run metrics
    for (int step = 0; step < config.steps; ++step) {
        sync();
        const int64_t t0 = ctx.now();
        const int64_t c0 = threadCpuNs();
        const int64_t r0 = ctx.recomputeNs();
        {
            PhaseScope step_scope(ctx, PhaseKind::Step, "step", step);
            Batch batch = model->makeBatch(step);
            ctx.tag(storageOf(batch.input), Category::Input);
            ctx.tag(storageOf(batch.target), Category::Input);
            at::Tensor loss;
            {
                PhaseScope forward(ctx, PhaseKind::Forward, "forward");
                const uint64_t mark = ctx.mark();
                loss = model->loss(batch, policy, dropout, ctx);
                // Allocated in forward and still alive: what autograd saved for
                // backward, plus the outputs (ledger.h).
                ctx.classifyLiveSince(mark, Category::Activation);
            }
            result.losses.push_back(loss.item<double>());
            {
                PhaseScope backward(ctx, PhaseKind::Backward, "backward");
                loss.backward();
                if (!policy.optimizer_in_backward) adam.tagGradients();
            }
            loss.reset();
            {
                PhaseScope opt(ctx, PhaseKind::Optimizer, "optimizer");
                if (!policy.optimizer_in_backward) adam.step();
            }
            batch = Batch{};
            sync();
        }
        ctx.commit();
        result.step_ns.push_back(ctx.now() - t0);
        result.step_thread_cpu_ns.push_back(threadCpuNs() - c0);
        result.recompute_ns.push_back(ctx.recomputeNs() - r0);
        // At most once a second, and after the last step: the copy is made on
        // this thread and kept by the writer, and one a step would sit among
        // the tensors in this thread's heap (ledger.h).
        if (writer && (step + 1 == config.steps || ctx.now() - metrics_at >= 1'000'000'000)) {
            writer->setRunMetrics(runMetrics(config, policy, result));
            metrics_at = ctx.now();
        }
    }

    if (cuda && !options.cuda_snapshot_path.empty() && result.cuda_snapshot.empty()) {
        auto dumped = dumpCudaSnapshot(options.cuda_snapshot_path);
        result.cuda_snapshot = dumped ? options.cuda_snapshot_path : dumped.message();
    }
    if (options.keep_parameters) {
        for (const auto& p : model->parameters()) {
            at::Tensor flat = p.tensor.detach().to(at::kCPU, at::kFloat).contiguous().view(-1);
            const float* data = flat.data_ptr<float>();
            result.parameters.insert(result.parameters.end(), data, data + flat.numel());
        }
    }
    capture.reset();
    if (ledger) result.counts = ledger->counts();
    return result;
}

}  // namespace

bool cudaAvailable() {
    return torch::cuda::is_available();
}

std::string torchVersion() {
    return TORCH_VERSION;
}

Result<HookCost> measureHookCost(int pairs, const std::string& scratch_trace) {
    auto round = [pairs] {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < pairs; ++i) {
            at::Tensor t = at::empty({64}, at::TensorOptions().dtype(at::kFloat));
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
        return static_cast<double>(ns) / (2.0 * pairs);
    };
    HookCost cost;
    cost.off_ns = cost.on_ns = 1e300;
    auto created = BackgroundTraceWriter::create(scratch_trace, TraceMetadata{});
    if (!created) return makeError("cannot write " + scratch_trace + ": " + created.message());
    std::unique_ptr<BackgroundTraceWriter> writer = std::move(created.value());
    AllocationLedger ledger(*writer);
    for (int rep = 0; rep < 5; ++rep) {
        cost.off_ns = std::min(cost.off_ns, round());
        const uint64_t before = ledger.counts().allocs + ledger.counts().frees;
        {
            CaptureScope capture(ledger, CaptureOptions{});
            cost.wraps_cpu_allocator = capture.wrapsCpuAllocator();
            cost.on_ns = std::min(cost.on_ns, round());
        }
        cost.events = ledger.counts().allocs + ledger.counts().frees - before;
        ledger.commit();
    }
    // The hot path without c10 around it, and the reading side per event.
    cost.hot_path_ns = cost.read_ns = 1e300;
    cost.clock_counts_cycles = TickClock::countsCycles();
    using Steady = std::chrono::steady_clock;
    auto ns = [](Steady::time_point a, Steady::time_point b) {
        return static_cast<double>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
    };
    for (int rep = 0; rep < 5; ++rep) {
        const auto t0 = Steady::now();
        for (int i = 0; i < pairs; ++i) {
            const uint64_t address = 0x10000 + 256 * static_cast<uint64_t>(i % 64);
            ledger.onAllocNow(address, 256, 0);
            ledger.onFreeNow(address, 256, 0);
        }
        const auto t1 = Steady::now();
        ledger.commit();
        ledger.finish();  // reads on this thread what the ledger's has not
        const auto t2 = Steady::now();
        cost.hot_path_ns = std::min(cost.hot_path_ns, ns(t0, t1) / (2.0 * pairs));
        cost.read_ns = std::min(cost.read_ns, ns(t1, t2) / (2.0 * pairs));
    }
    if (auto closed = writer->close(); !closed)
        return makeError("cannot finish " + scratch_trace + ": " + closed.message());
    return cost;
}

Result<RunResult> runPolicy(const TrainConfig& config, const Policy& policy,
                            const RunOptions& options) {
    if (config.threads > 0) at::set_num_threads(config.threads);
    std::unique_ptr<BackgroundTraceWriter> writer;
    std::unique_ptr<AllocationLedger> ledger;
    CpuSet recorder_cpus;
    if (!options.trace_path.empty()) {
        // Chunks of 1024 events (40 KiB as Events): the ledger's thread
        // appends into a buffer that stays in cache, and the writer takes it
        // while it still is (with the default 64 Ki events the buffer is 2.5
        // MiB, and the two threads took 40% more CPU). And the writer yields
        // its core after each chunk, about 50 us of work (see cpu_set.h).
        // The file is 3% larger than with 4096 (gpt quick, 300 steps: 2.62
        // MB against 2.55); 256 events cost the same time and 15% in size.
        NativeWriterOptions writing;
        writing.events_per_chunk = 1024;
        auto created = BackgroundTraceWriter::create(options.trace_path,
                                                     metadataFor(config, policy, options), writing);
        if (!created)
            return makeError("cannot write " + options.trace_path + ": " + created.message());
        writer = std::move(created.value());
        try {
            ledger = std::make_unique<AllocationLedger>(*writer);
        } catch (const std::system_error& e) {
            (void)writer->close();
            return makeError("cannot start recording " + options.trace_path + ": " + e.what());
        }
        // Off the training thread's core: see memscope/cpu_set.h. Where the
        // system refuses, they run wherever the scheduler puts them.
        if (auto elsewhere = cpusBesideCallingThread();
            elsewhere && writer->keepThreadOn(*elsewhere) && ledger->keepThreadOn(*elsewhere))
            recorder_cpus = *elsewhere;
    }
    RunResult result;
    try {
        result = train(config, policy, options, writer.get(), ledger.get());
    } catch (const std::exception& e) {
        if (writer) (void)writer->close();
        return makeError(policyName(policy) + ": training failed: " + e.what());
    }
    if (writer && result.counts.refused_phase_batches > 0) {
        (void)writer->close();
        return makeError(policyName(policy) +
                         ": the trace writer numbered phases that this run did not add (a bug in "
                         "memscope-train: please report it)");
    }
    if (writer) {
        // The run metrics are complete already: train() set them after the last step.
        writer->setProperty("unmatched_frees", std::to_string(result.counts.unmatched_frees));
        result.recorder_cpus = recorder_cpus;
        if (!recorder_cpus.empty()) writer->setProperty("recorder_cpus", recorder_cpus.toString());
        if (!result.cuda_snapshot.empty())
            writer->setProperty("cuda_snapshot", result.cuda_snapshot);
        auto closed = writer->close();
        if (!closed)
            return makeError("cannot finish " + options.trace_path + ": " + closed.message());
    }
    return result;
}

}  // namespace memscope::trainer
