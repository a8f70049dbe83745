// A simulated training loop. Per step and device: an input batch, a forward
// pass that saves activations block by block and makes short-lived
// temporaries, a backward pass that frees the activations in reverse and
// allocates gradients, an optimizer step (its state allocated once) that frees
// the gradients. Addresses come from a caching-allocator-like model: 512-byte
// rounding, 2 MiB small and 20 MiB+ large segments, freed blocks reused LIFO by
// size; some frees complete late (another stream still used the block).
// Devices run the same program with their own clocks; their events are merged
// by time.
#include "trace_generator.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace memscope::bench {
namespace {

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
    uint64_t next() {  // splitmix64
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t below(uint64_t n) { return next() % n; }
    bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }

private:
    uint64_t state_;
};

constexpr uint64_t kRound = 512;
constexpr uint64_t kSmallLimit = 1u << 20;  // smaller requests go to small segments
constexpr uint64_t kSmallSegment = 2u << 20;
constexpr uint64_t kLargeSegment = 20u << 20;
constexpr uint64_t kMiB = 1u << 20;

uint64_t roundUp(uint64_t v, uint64_t to) {
    return (v + to - 1) / to * to;
}

// Stacks: a shared outer part (the training loop) and per-site inner frames.
std::vector<StackId> makeStacks(Trace& t, const GeneratorOptions& o, Rng& rng) {
    std::vector<FrameId> frames;
    const int files = std::max(1, o.distinct_frames / 10);
    for (int i = 0; i < o.distinct_frames; ++i) {
        const std::string file = "/opt/venv/lib/python3.11/site-packages/model/module_" +
                                 std::to_string(i % files) + ".py";
        const Frame f{t.internString("Module" + std::to_string(i / 7) + ".op_" + std::to_string(i)),
                      t.internString(file), uint32_t(10 + rng.below(2000))};
        frames.push_back(t.internFrame(f));
    }
    const size_t outer = std::min<size_t>(12, frames.size());
    std::vector<StackId> stacks;
    std::vector<FrameId> s;
    for (int i = 0; i < o.distinct_stacks; ++i) {
        const int depth =
            o.min_stack_depth +
            int(rng.below(uint64_t(std::max(1, o.max_stack_depth - o.min_stack_depth + 1))));
        s.clear();
        // Innermost first: site frames, then the shared training-loop frames.
        for (int k = 0; k < depth - int(outer); ++k)
            s.push_back(frames[outer + rng.below(frames.size() - outer)]);
        for (size_t k = outer; k-- > 0;) s.push_back(frames[k]);
        stacks.push_back(t.internStack(s));
    }
    return stacks;
}

struct Program {
    int blocks;
    std::vector<std::vector<uint64_t>> activation_sizes;  // per block, saved tensors
    std::vector<std::vector<uint64_t>> parameter_sizes;   // per block
    uint64_t input_size;
};

Program makeProgram(int blocks, Rng& rng) {
    Program p;
    p.blocks = blocks;
    const uint64_t act_choices[] = {256 << 10, 1 * kMiB, 4 * kMiB, 8 * kMiB, 16 * kMiB, 32 * kMiB};
    const uint64_t param_choices[] = {2 * kMiB, 8 * kMiB, 8 * kMiB, 4 << 10};
    for (int b = 0; b < blocks; ++b) {
        p.activation_sizes.emplace_back();
        for (int t = 0; t < 8; ++t) p.activation_sizes.back().push_back(act_choices[rng.below(6)]);
        p.parameter_sizes.emplace_back(std::begin(param_choices), std::end(param_choices));
    }
    p.input_size = 8 * kMiB;
    return p;
}

struct Live {
    uint64_t address = 0;
    uint64_t size = 0;
    StackId stack;
    Category category = Category::Unknown;
};

// One device's allocator and clock; events go to `out`.
class DeviceSim {
public:
    DeviceSim(int16_t device, Trace& trace, const std::vector<StackId>& stacks,
              uint32_t side_stream, uint64_t seed, int64_t start)
        : device_(device),
          trace_(trace),
          stacks_(stacks),
          side_stream_(side_stream),
          rng_(seed),
          clock_(start),
          next_segment_(0x7f0000000000ull + uint64_t(device + 1) * (uint64_t(1) << 36)) {}

    std::vector<Event> out;
    std::unordered_map<uint64_t, Live> live;  // address -> block, for the end state
    std::vector<Segment> segments;

    int64_t clock() const { return clock_; }

    PhaseId begin(const std::string& name, PhaseKind kind, int step, int block) {
        Phase p;
        p.name = trace_.internString(name);
        p.kind = kind;
        p.parent = phases_.empty() ? PhaseId() : phases_.back();
        p.step = step;
        p.block = block;
        p.device = device_;
        p.start = tick();
        p.end = p.start;
        phases_.push_back(trace_.addPhase(p));
        return phases_.back();
    }
    void end() {
        trace_.phases[phases_.back().value - 1].end = tick();
        phases_.pop_back();
    }

    StackId stack(uint64_t site) {
        return stacks_[(site * 2654435761u + rng_.below(4)) % stacks_.size()];
    }

    Live alloc(uint64_t request, Category category, uint64_t site) {
        completeSome();
        const uint64_t size = roundUp(std::max<uint64_t>(request, 1), kRound);
        Live l{place(size), size, stack(site), category};
        emit(EventKind::Alloc, l.address, size, l.stack, category);
        live[l.address] = l;
        return l;
    }

    void free(const Live& l, uint64_t site) {
        const StackId s = stack(site + 7);
        emit(EventKind::FreeRequested, l.address, l.size, s, l.category);
        if (rng_.chance(0.1)) {
            deferred_.push_back({l, s});  // completes later: its block is not reusable yet
        } else {
            complete(l, s);
        }
    }

    void temporaries(int count, uint64_t site) {
        for (int i = 0; i < count; ++i) {
            // Log-uniform from 512 B to 32 MiB: many small, a few large.
            const uint64_t size = uint64_t(512) << rng_.below(17);
            const Live t = alloc(size + rng_.below(size), Category::Temporary, site + uint64_t(i));
            free(t, site + uint64_t(i));
        }
    }

    void flushDeferred() {
        for (auto& [l, s] : deferred_) complete(l, s);
        deferred_.clear();
    }

private:
    int64_t tick() { return clock_ += int64_t(200 + rng_.below(6000)); }

    void emit(EventKind kind, uint64_t address, uint64_t size, StackId stack, Category category) {
        Event e;
        e.time = tick();
        e.kind = kind;
        e.address = address;
        e.size = size;
        e.stack = stack;
        e.phase = phases_.empty() ? PhaseId() : phases_.back();
        e.stream = rng_.chance(0.05) ? side_stream_ : 0;
        e.device = device_;
        e.category = category;
        out.push_back(e);
    }

    void complete(const Live& l, StackId s) {
        emit(EventKind::FreeCompleted, l.address, l.size, s, l.category);
        live.erase(l.address);
        free_by_size_[l.size].push_back(l.address);
    }

    void completeSome() {
        if (deferred_.empty() || !rng_.chance(0.3)) return;
        complete(deferred_.front().first, deferred_.front().second);
        deferred_.erase(deferred_.begin());
    }

    uint64_t place(uint64_t size) {
        auto& reuse = free_by_size_[size];
        if (!reuse.empty()) {
            const uint64_t a = reuse.back();
            reuse.pop_back();
            return a;
        }
        Region& r = size < kSmallLimit ? small_ : large_;
        if (r.cursor + size > r.end) {
            const uint64_t seg_size = size < kSmallLimit
                                          ? kSmallSegment
                                          : std::max(kLargeSegment, roundUp(size, kSmallSegment));
            Segment seg;
            seg.address = next_segment_;
            seg.total_size = seg_size;
            seg.device = device_;
            seg.large = size >= kSmallLimit;
            seg.stack = stack(size);
            segments.push_back(seg);
            emit(EventKind::SegmentAlloc, seg.address, seg_size, seg.stack, Category::Unknown);
            r.cursor = next_segment_;
            r.end = next_segment_ + seg_size;
            next_segment_ += roundUp(seg_size, kSmallSegment) + kSmallSegment;
        }
        const uint64_t a = r.cursor;
        r.cursor += size;
        return a;
    }

    struct Region {
        uint64_t cursor = 0;
        uint64_t end = 0;
    };

    int16_t device_;
    Trace& trace_;
    const std::vector<StackId>& stacks_;
    uint32_t side_stream_;
    Rng rng_;
    int64_t clock_;
    uint64_t next_segment_;
    Region small_, large_;
    std::vector<PhaseId> phases_;
    std::unordered_map<uint64_t, std::vector<uint64_t>> free_by_size_;
    std::vector<std::pair<Live, StackId>> deferred_;
};

// One training step on one device (its events end up in sim.out).
void runStep(DeviceSim& sim, const Program& p, int step, std::vector<Live>& optimizer_state) {
    sim.begin("step " + std::to_string(step), PhaseKind::Step, step, -1);
    const Live input = sim.alloc(p.input_size, Category::Input, 1);
    std::vector<std::vector<Live>> saved(p.blocks);
    std::vector<Live> grads;

    sim.begin("forward", PhaseKind::Forward, step, -1);
    for (int b = 0; b < p.blocks; ++b) {
        sim.begin("block " + std::to_string(b), PhaseKind::Block, step, b);
        for (size_t t = 0; t < p.activation_sizes[b].size(); ++t) {
            saved[b].push_back(sim.alloc(p.activation_sizes[b][t], Category::Activation,
                                         100 + uint64_t(b) * 64 + t));
            sim.temporaries(1, 10000 + uint64_t(b) * 64 + t * 2);
        }
        sim.temporaries(4, 20000 + uint64_t(b) * 64);
        sim.end();
    }
    sim.end();

    sim.begin("backward", PhaseKind::Backward, step, -1);
    for (int b = p.blocks - 1; b >= 0; --b) {
        sim.begin("block " + std::to_string(b), PhaseKind::Block, step, b);
        sim.temporaries(6, 30000 + uint64_t(b) * 64);
        for (size_t k = 0; k < p.parameter_sizes[b].size(); ++k)
            grads.push_back(sim.alloc(p.parameter_sizes[b][k], Category::Gradient,
                                      40000 + uint64_t(b) * 8 + k));
        for (size_t t = saved[b].size(); t-- > 0;) {
            sim.free(saved[b][t], 50000 + uint64_t(b) * 64 + t);
            sim.temporaries(1, 60000 + uint64_t(b) * 64 + t);
        }
        sim.end();
    }
    sim.end();

    sim.begin("optimizer", PhaseKind::Optimizer, step, -1);
    if (optimizer_state.empty()) {
        for (int b = 0; b < p.blocks; ++b)
            for (size_t k = 0; k < p.parameter_sizes[b].size(); ++k)
                for (int m = 0; m < 2; ++m)  // Adam: two moments per parameter
                    optimizer_state.push_back(
                        sim.alloc(p.parameter_sizes[b][k], Category::OptimizerState,
                                  70000 + uint64_t(b) * 16 + k * 2 + uint64_t(m)));
    }
    sim.temporaries(8, 80000);
    for (const Live& g : grads) sim.free(g, 90000);
    sim.end();

    sim.free(input, 2);
    sim.flushDeferred();
    sim.end();
}

// Drops the events past `target`, undoing their effect on the end state.
void truncate(Trace& t, uint64_t target, std::vector<DeviceSim>& sims) {
    for (size_t i = t.events.size(); i-- > target;) {
        const Event& e = t.events[i];
        DeviceSim& sim = sims[size_t(e.device)];
        if (e.kind == EventKind::Alloc) {
            sim.live.erase(e.address);
        } else if (e.kind == EventKind::FreeCompleted) {
            sim.live[e.address] = Live{e.address, e.size, e.stack, e.category};
        } else if (e.kind == EventKind::SegmentAlloc) {
            std::erase_if(sim.segments, [&](const Segment& s) { return s.address == e.address; });
        }
    }
    t.events.resize(target);
}

// Segments with the blocks still live at the end, in address order.
AllocatorState endState(std::vector<DeviceSim>& sims) {
    AllocatorState state;
    for (DeviceSim& sim : sims) {
        std::vector<Live> live;
        live.reserve(sim.live.size());
        for (const auto& [address, l] : sim.live) live.push_back(l);
        std::sort(live.begin(), live.end(),
                  [](const Live& a, const Live& b) { return a.address < b.address; });
        std::sort(sim.segments.begin(), sim.segments.end(),
                  [](const Segment& a, const Segment& b) { return a.address < b.address; });
        size_t next = 0;
        for (Segment seg : sim.segments) {
            seg.first_block = uint32_t(state.blocks.size());
            while (next < live.size() && live[next].address < seg.address) ++next;
            while (next < live.size() && live[next].address < seg.address + seg.total_size) {
                Block b;
                b.address = live[next].address;
                b.size = live[next].size;
                b.requested_size = live[next].size;
                b.stack = live[next].stack;
                b.state = BlockState::ActiveAllocated;
                state.blocks.push_back(b);
                ++next;
            }
            seg.block_count = uint32_t(state.blocks.size()) - seg.first_block;
            state.segments.push_back(seg);
        }
    }
    return state;
}

}  // namespace

Trace generateTrace(const GeneratorOptions& o) {
    Trace t;
    Rng rng(o.seed);
    t.metadata.source_format = "generator";
    t.metadata.name = "generated-" + std::to_string(o.seed);
    t.metadata.time_base = TimeBase::Nanoseconds;
    t.metadata.pid = 12345;
    t.metadata.rank = 0;
    t.metadata.setProperty("model",
                           "synthetic transformer, " + std::to_string(o.blocks) + " blocks");
    t.metadata.setProperty("policy", "full-save");

    const std::vector<StackId> stacks = makeStacks(t, o, rng);
    const uint32_t side_stream = t.internStream(0x5a5a0000ull + o.seed);
    const Program program = makeProgram(std::max(1, o.blocks), rng);
    const int devices = std::clamp(o.devices, 1, 64);
    const int64_t start = 1'700'000'000'000'000'000;

    std::vector<DeviceSim> sims;
    sims.reserve(size_t(devices));
    for (int d = 0; d < devices; ++d)
        sims.emplace_back(int16_t(d), t, stacks, side_stream, rng.next(), start);
    std::vector<std::vector<Live>> optimizer_state(static_cast<size_t>(devices));

    // Parameters first, outside any phase.
    for (DeviceSim& sim : sims)
        for (int b = 0; b < program.blocks; ++b)
            for (size_t k = 0; k < program.parameter_sizes[b].size(); ++k)
                sim.alloc(program.parameter_sizes[b][k], Category::Parameter,
                          5 + uint64_t(b) * 8 + k);

    t.events.reserve(o.events + 100000);
    std::vector<Event> merged;
    for (int step = 0; t.events.size() < o.events; ++step) {
        for (int d = 0; d < devices; ++d)
            runStep(sims[size_t(d)], program, step, optimizer_state[size_t(d)]);
        // Merge this step's events of all devices by time.
        merged.clear();
        for (DeviceSim& sim : sims) {
            const size_t mid = merged.size();
            merged.insert(merged.end(), sim.out.begin(), sim.out.end());
            std::inplace_merge(merged.begin(), merged.begin() + ptrdiff_t(mid), merged.end(),
                               [](const Event& a, const Event& b) { return a.time < b.time; });
            sim.out.clear();
        }
        t.events.insert(t.events.end(), merged.begin(), merged.end());
        const int64_t step_end = sims[0].clock();
        t.annotations.push_back({step_end, t.internString("ProfilerStep#" + std::to_string(step)),
                                 0, AnnotationStage::Instant});
        t.attributes.push_back({t.events.size() - 1, t.internString("user_metadata"),
                                t.internString("step " + std::to_string(step))});
    }
    truncate(t, o.events, sims);
    std::erase_if(t.attributes,
                  [&](const EventAttribute& a) { return a.event >= t.events.size(); });
    t.allocator_state = endState(sims);
    return t;
}

}  // namespace memscope::bench
