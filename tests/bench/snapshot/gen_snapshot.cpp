// Writes a large, realistic memory snapshot pickle laid out the way CPython's
// pickle.dump writes torch's: one dict per trace entry, a fresh frames list per
// entry whose frame dicts are shared through the memo (deep stacks with common
// prefixes), segments with blocks, allocator settings.
//   memscope-gen-snapshot OUT [--mb SIZE_MB] [--seed N] [--shape steady|churn|segmented]
// Shapes:
//   steady (default): up to 20,000 live allocations of 512 B..16 MiB, 600
//     stacks 30..110 deep, 4000 segments; the same bytes for the same seed as
//     before --shape existed.
//   churn: many short-lived allocations, few live at once (about 4000 at the
//     peak), 300 stacks 25..66 deep, 200 segments; at --mb 1024 about 1.5 M
//     allocations (each freed: alloc, free_requested, free_completed), about
//     4.6 M trace entries.
//   segmented: a caching allocator's trace from a large model: 3000 stacks
//     8..60 deep, a segment_alloc entry for every new segment (about 29,000
//     at --mb 1024, all of them in the segments list written after the
//     trace), a quarter of the allocations over 1 MiB.
// Prints the entries, allocations, peak live and distinct stacks written.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "../common/bench_args.h"
#include "pickle_writer.h"

namespace {

using memscope::pickle::Batcher;
using memscope::pickle::Writer;

struct Gen {
    Writer& w;
    std::mt19937_64 rng;
    std::unordered_map<std::string, uint32_t> keys;
    std::vector<uint32_t> frame_memo;           // frame index -> memo id (UINT32_MAX = not yet)
    std::vector<std::vector<uint32_t>> stacks;  // frame indexes, innermost first
    std::vector<bool> stack_used;               // in the device trace

    void key(const std::string& k) {
        auto it = keys.find(k);
        if (it != keys.end()) return w.get(it->second);
        w.string(k);
        keys.emplace(k, w.memoize());
    }
    void frame(uint32_t f) {
        if (frame_memo[f] != UINT32_MAX) return w.get(frame_memo[f]);
        w.emptyDict();
        frame_memo[f] = w.memoize();
        w.mark();
        key("name");
        w.string((f % 7 == 0 ? "at::native::" : "torch::nn::functional::") + std::string("op_") +
                 std::to_string(f) +
                 (f % 3 == 0 ? "(at::Tensor const&, c10::optional<at::Tensor> const&)" : ""));
        w.memoize();
        key("filename");
        w.string("/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module_" +
                 std::to_string(f % 97) + ".py");
        w.memoize();
        key("line");
        w.integer(int64_t(10 + f % 2000));
        w.setItems();
    }
    void frames(const std::vector<uint32_t>& s) {
        w.emptyList();
        w.memoize();
        Batcher b(w, false);
        for (uint32_t f : s) {
            b.item();
            frame(f);
        }
        b.finish();
    }

    // Segments, each tiled by four blocks (steady: 4000 of them, as always).
    void segments(int count) {
        key("segments");
        w.emptyList();
        w.memoize();
        Batcher segs(w, false);
        uint64_t addr = 0x7f0000000000ull;
        for (int s = 0; s < count; ++s) {
            segs.item();
            const uint64_t total = (2ull << 20) * (1 + rng() % 16);
            w.emptyDict();
            w.memoize();
            w.mark();
            key("device");
            w.integer(0);
            key("address");
            w.unsignedInteger(addr);
            key("total_size");
            w.unsignedInteger(total);
            key("allocated_size");
            w.unsignedInteger(total / 2);
            key("active_size");
            w.unsignedInteger(total / 2);
            key("requested_size");
            w.unsignedInteger(total / 2);
            key("stream");
            w.integer(0);
            key("segment_type");
            key("large");
            key("segment_pool_id");
            w.integer(0);
            w.integer(0);
            w.tuple2();
            key("is_expandable");
            w.boolean(false);
            key("frames");
            w.emptyList();
            w.memoize();
            key("blocks");
            w.emptyList();
            w.memoize();
            Batcher blocks(w, false);
            uint64_t b = addr;
            for (int k = 0; k < 4; ++k) {
                blocks.item();
                w.emptyDict();
                w.memoize();
                w.mark();
                key("address");
                w.unsignedInteger(b);
                key("size");
                w.unsignedInteger(total / 4);
                key("requested_size");
                w.unsignedInteger(total / 4 - 512);
                key("state");
                key(k % 2 ? "inactive" : "active_allocated");
                key("frames");
                if (k % 2) {
                    w.emptyList();
                    w.memoize();
                } else
                    frames(stacks[rng() % stacks.size()]);
                w.setItems();
                b += total / 4;
            }
            blocks.finish();
            w.setItems();
            w.boundary();
            addr += total;
        }
        segs.finish();
    }

    // The segments left at the end of a trace that released none: one
    // inactive block each, no frames (written after the trace, as a dict may
    // order its keys).
    void finalSegments(const std::vector<std::pair<uint64_t, uint64_t>>& list) {
        key("segments");
        w.emptyList();
        w.memoize();
        Batcher segs(w, false);
        for (const auto& [addr, total] : list) {
            segs.item();
            w.emptyDict();
            w.memoize();
            w.mark();
            key("device");
            w.integer(0);
            key("address");
            w.unsignedInteger(addr);
            key("total_size");
            w.unsignedInteger(total);
            key("allocated_size");
            w.integer(0);
            key("active_size");
            w.integer(0);
            key("requested_size");
            w.integer(0);
            key("stream");
            w.integer(0);
            key("segment_type");
            key(total > (2ull << 20) ? "large" : "small");
            key("blocks");
            w.emptyList();
            w.memoize();
            w.mark();
            w.emptyDict();
            w.memoize();
            w.mark();
            key("address");
            w.unsignedInteger(addr);
            key("size");
            w.unsignedInteger(total);
            key("requested_size");
            w.integer(0);
            key("state");
            key("inactive");
            key("frames");
            w.emptyList();
            w.memoize();
            w.setItems();
            w.appends();
            w.setItems();
            w.boundary();
        }
        segs.finish();
    }

    // A free as the caching allocator records it: free_requested, then
    // free_completed a little later.
    void freed(Batcher& list, uint64_t a, uint64_t size, size_t stack, uint64_t& time_us) {
        time_us += 1 + rng() % 20;
        entry(list, "free_requested", a, size, time_us, stack);
        time_us += 1 + rng() % 5;
        entry(list, "free_completed", a, size, time_us, stack);
    }

    // One trace entry; `stack` indexes `stacks`.
    void entry(Batcher& list, const char* action, uint64_t a, uint64_t size, uint64_t time_us,
               size_t stack) {
        list.item();
        w.emptyDict();
        w.memoize();
        w.mark();
        key("action");
        key(action);
        key("addr");
        w.unsignedInteger(a);
        key("size");
        w.unsignedInteger(size);
        key("stream");
        w.integer(0);
        key("time_us");
        w.unsignedInteger(time_us);
        key("frames");
        frames(stacks[stack]);
        key("compile_context");
        key("N/A");
        key("user_metadata");
        key("");
        w.setItems();
        w.boundary();
        stack_used[stack] = true;
    }
};

struct Written {
    uint64_t entries = 0, allocations = 0, freed = 0, peak_live = 0;
};

// Today's shape: a random walk between 64 and 20,000 live allocations.
Written steadyTrace(Gen& g, Batcher& list, std::FILE* out, uint64_t target) {
    Written n;
    std::vector<std::pair<uint64_t, uint64_t>> live;
    uint64_t next_addr = 0x7f8000000000ull, time_us = 1754641328380304ull;
    while (true) {
        if ((n.entries & 4095) == 0 && uint64_t(std::ftell(out)) >= target) break;
        const bool alloc = live.size() < 64 || (live.size() < 20000 && g.rng() % 2 == 0);
        uint64_t a, size;
        const char* action;
        if (alloc) {
            size = 512ull << (g.rng() % 16);
            a = next_addr;
            next_addr += size;
            live.emplace_back(a, size);
            action = "alloc";
            ++n.allocations;
            n.peak_live = std::max<uint64_t>(n.peak_live, live.size());
        } else {
            const size_t i = size_t(g.rng() % live.size());
            std::tie(a, size) = live[i];
            live[i] = live.back();
            live.pop_back();
            action = "free_completed";
            ++n.freed;
        }
        // free_requested then free_completed, as the caching allocator records them
        for (int pass = alloc ? 1 : 0; pass < 2; ++pass) {
            time_us += 1 + g.rng() % 50;
            const size_t stack = size_t(g.rng() % g.stacks.size());
            g.entry(list, pass == 0 ? "free_requested" : action, a, size, time_us, stack);
            ++n.entries;
        }
    }
    return n;
}

// Many short-lived allocations, few live at once: iterations that build up to
// a high-water mark (1500..3900 live, 4000 in every eighth) and drain back to
// about 100, most frees taking one of the latest allocations (temporaries).
// Freed addresses are reused by size, as the caching allocator does; every
// allocation is freed before the trace ends.
Written churnTrace(Gen& g, Batcher& list, std::FILE* out, uint64_t target) {
    Written n;
    struct Live {
        uint64_t addr, size;
        uint32_t stack;
    };
    std::vector<Live> live;
    std::unordered_map<uint64_t, std::vector<uint64_t>> cached;  // size -> freed addresses
    uint64_t next_addr = 0x7f8000000000ull, time_us = 1754641328380304ull;
    // Sites: a skewed choice, a few hot ones (the per-layer temporaries).
    const size_t sites = g.stacks.size();
    auto site = [&]() -> uint32_t {
        const uint64_t r = g.rng();
        return uint32_t(r % 4 ? (r >> 8) % std::min<size_t>(sites, 40) : (r >> 8) % sites);
    };
    bool rising = true;
    uint64_t iteration = 0, high = 4000;
    auto free_one = [&](size_t i) {
        const Live l = live[i];
        live[i] = live.back();
        live.pop_back();
        g.freed(list, l.addr, l.size, l.stack, time_us);
        cached[l.size].push_back(l.addr);
        n.entries += 2;
        ++n.freed;
    };
    while (true) {
        if ((n.entries & 4095) < 3 && uint64_t(std::ftell(out)) >= target) break;
        if (rising && live.size() >= high) rising = false;
        if (!rising && live.size() <= 100) {
            rising = true;
            ++iteration;
            high = iteration % 8 == 0 ? 4000 : 1500 + g.rng() % 2400;
        }
        // Rising: 3 allocations to 2 frees; draining: the reverse.
        const bool alloc = live.empty() || (g.rng() % 5 < (rising ? 3u : 2u));
        if (alloc) {
            const uint64_t size = 512ull << (g.rng() % 12);
            uint64_t a;
            auto& reuse = cached[size];
            if (!reuse.empty()) {
                a = reuse.back();
                reuse.pop_back();
            } else {
                a = next_addr;
                next_addr += size;
            }
            const uint32_t stack = site();
            time_us += 1 + g.rng() % 20;
            g.entry(list, "alloc", a, size, time_us, stack);
            live.push_back({a, size, stack});
            ++n.entries;
            ++n.allocations;
            n.peak_live = std::max<uint64_t>(n.peak_live, live.size());
        } else {
            // Mostly one of the 16 latest (a temporary), else any live one.
            const size_t k = live.size();
            free_one(g.rng() % 4 ? k - 1 - size_t(g.rng() % std::min<size_t>(k, 16))
                                 : size_t(g.rng() % k));
        }
    }
    while (!live.empty()) free_one(live.size() - 1);
    return n;
}

// A caching allocator's trace from a large model (the shape neither of the
// above has, seen in other users' snapshots): deep stacks from many distinct
// sites, a segment_alloc in the trace for each cudaMalloc (about 29,000 at
// --mb 1024), a quarter of the allocations over 1 MiB, free_requested before
// every free_completed. Small requests (512 B..1 MiB) are carved from 2 MiB
// segments; a large one takes a segment of its own, rounded to 2 MiB, unless a
// freed block of the same rounded size is cached. Iterations rise to 2,000..
// 6,000 live allocations and drain, as in churn; the segments list at the end
// holds every segment (nothing is released), each as one inactive block.
Written segmentedTrace(Gen& g, Batcher& list, std::FILE* out, uint64_t target,
                       std::vector<std::pair<uint64_t, uint64_t>>& segments) {
    Written n;
    struct Live {
        uint64_t addr, size, rounded;
        uint32_t stack;
    };
    std::vector<Live> live;
    std::unordered_map<uint64_t, std::vector<uint64_t>> cached;  // rounded size -> freed addresses
    uint64_t next_segment = 0x7f0000000000ull, time_us = 1754641328380304ull;
    uint64_t small_top = 0, small_end = 0;  // the small segment being carved
    const size_t sites = g.stacks.size();
    auto site = [&]() -> uint32_t {
        const uint64_t r = g.rng();
        return uint32_t(r % 3 ? (r >> 8) % std::min<size_t>(sites, 300) : (r >> 8) % sites);
    };
    auto segment_alloc = [&](uint64_t size, uint32_t stack) {
        const uint64_t a = next_segment;
        next_segment += size;
        segments.emplace_back(a, size);
        time_us += 1 + g.rng() % 3;
        g.entry(list, "segment_alloc", a, size, time_us, stack);
        ++n.entries;
        return a;
    };
    bool rising = true;
    uint64_t iteration = 0, high = 4000;
    auto free_one = [&](size_t i) {
        const Live l = live[i];
        live[i] = live.back();
        live.pop_back();
        g.freed(list, l.addr, l.size, l.stack, time_us);
        cached[l.rounded].push_back(l.addr);
        n.entries += 2;
        ++n.freed;
    };
    while (true) {
        if ((n.entries & 4095) < 4 && uint64_t(std::ftell(out)) >= target) break;
        if (rising && live.size() >= high) rising = false;
        if (!rising && live.size() <= 200) {
            rising = true;
            ++iteration;
            high = 2000 + g.rng() % 4000;
        }
        const bool alloc = live.empty() || (g.rng() % 5 < (rising ? 3u : 2u));
        if (!alloc) {
            const size_t k = live.size();
            free_one(g.rng() % 3 ? k - 1 - size_t(g.rng() % std::min<size_t>(k, 32))
                                 : size_t(g.rng() % k));
            continue;
        }
        const uint32_t stack = site();
        const bool large = g.rng() % 4 == 0;
        // Large: 1..16 MiB in 256 KiB steps, in segments rounded to 2 MiB.
        const uint64_t size =
            large ? (1ull << 20) + (g.rng() % 61 + 1) * (256ull << 10) : 512ull << (g.rng() % 12);
        const uint64_t rounded = large ? (size + (2ull << 20) - 1) & ~((2ull << 20) - 1) : size;
        // The cached block does not always fit (fragmentation, another stream):
        // a sixth of small requests and one in a hundred large ones take new
        // memory, about 29,000 new segments in 1 GB of trace.
        const bool miss = large ? g.rng() % 100 == 0 : g.rng() % 6 == 0;
        uint64_t a;
        auto& reuse = cached[rounded];
        if (!reuse.empty() && !miss) {
            a = reuse.back();
            reuse.pop_back();
        } else if (large) {
            a = segment_alloc(rounded, stack);
        } else {
            if (small_top + size > small_end) {
                small_top = segment_alloc(2ull << 20, stack);
                small_end = small_top + (2ull << 20);
            }
            a = small_top;
            small_top += size;
        }
        time_us += 1 + g.rng() % 20;
        g.entry(list, "alloc", a, size, time_us, stack);
        live.push_back({a, size, rounded, stack});
        ++n.entries;
        ++n.allocations;
        n.peak_live = std::max<uint64_t>(n.peak_live, live.size());
    }
    while (!live.empty()) free_one(live.size() - 1);
    return n;
}

}  // namespace

int main(int argc, char** argv) {
    static const char kUsage[] =
        "usage: memscope-gen-snapshot OUT [--mb SIZE_MB] [--seed N] [--shape "
        "steady|churn|segmented]";
    static const char kHelp[] =
        "Writes a PyTorch memory snapshot pickle of about SIZE_MB (default 1024) to OUT.\n"
        "  --mb SIZE_MB    target file size, 1..65536 (the trace grows until it is reached)\n"
        "  --seed N        random seed (default 42): the same seed, the same bytes\n"
        "  --shape steady  (default) up to 20,000 live allocations, 600 stacks, 4000 segments\n"
        "  --shape churn   many short-lived allocations, about 4000 live at the peak, 300\n"
        "                  stacks, 200 segments (at --mb 1024: about 1.5 M allocations)\n"
        "  --shape segmented  a caching allocator's trace from a large model: 3000 stacks\n"
        "                  8..60 deep, a segment_alloc per cudaMalloc (about 29,000 at\n"
        "                  --mb 1024), a quarter of the allocations over 1 MiB\n"
        "Prints the trace entries, allocations, peak live allocations and distinct stacks.\n"
        "Note: steady puts about 4 MB of segments first; below --mb 5 it has no entries.\n";
    memscope::bench::Args args(argc, argv, kUsage, kHelp);
    uint64_t target_mb = 1024;
    uint64_t seed = 42;
    std::string path, shape = "steady";
    while (args.more()) {
        if (args.option("--mb", target_mb, uint64_t(1), uint64_t(65536))) continue;
        if (args.option("--seed", seed, uint64_t(0), UINT64_MAX)) continue;
        if (args.choice("--shape", shape, "steady|churn|segmented")) continue;
        if (path.empty() && args.positional(path)) continue;
        args.unknown();
    }
    if (path.empty()) args.fail("missing OUT (the file to write)");
    const bool churn = shape == "churn", segmented = shape == "segmented";
    std::FILE* out = std::fopen(path.c_str(), "wb");
    if (!out) {
        std::perror(path.c_str());
        return 1;
    }
    std::setvbuf(out, nullptr, _IOFBF, 1 << 20);
    Writer w(out);
    Gen g{w, std::mt19937_64(seed), {}, {}, {}, {}};

    // Steady: 3000 distinct frames; 600 stacks 30..110 deep grown from shared
    // prefixes (a training loop: the outer frames are the same, the inner ones
    // vary). Churn: 1500 frames, 300 stacks 25..66 deep. Segmented: 6000
    // frames, 3000 stacks 8..60 deep.
    const uint32_t kFrames = segmented ? 6000
                             : churn   ? 1500
                                       : 3000,
                   kStacks = segmented ? 3000
                             : churn   ? 300
                                       : 600;
    const int kSegments = segmented ? 0 : churn ? 200 : 4000;
    g.frame_memo.assign(kFrames, UINT32_MAX);
    std::vector<uint32_t> outer(40);
    for (uint32_t i = 0; i < outer.size(); ++i) outer[i] = i;
    for (uint32_t s = 0; s < kStacks; ++s) {
        std::vector<uint32_t> st;
        const uint32_t inner = segmented ? 4 + uint32_t(g.rng() % 37)
                               : churn   ? 10 + uint32_t(g.rng() % 22)
                                         : 10 + uint32_t(g.rng() % 70);
        for (uint32_t i = 0; i < inner; ++i) st.push_back(40 + uint32_t(g.rng() % (kFrames - 40)));
        const uint32_t keep = segmented ? 4 + uint32_t(g.rng() % 17)
                              : churn   ? 15 + uint32_t(g.rng() % 21)
                                        : 20 + uint32_t(g.rng() % 21);
        st.insert(st.end(), outer.end() - keep, outer.end());
        g.stacks.push_back(std::move(st));
    }
    g.stack_used.assign(kStacks, false);

    w.begin();
    w.emptyDict();
    w.memoize();
    Batcher top(w, true);

    if (!segmented) {
        top.item();
        g.segments(kSegments);
    }

    // One device trace with entries until the file reaches the target size.
    top.item();
    g.key("device_traces");
    w.emptyList();
    w.memoize();
    Batcher devices(w, false);
    devices.item();
    w.emptyList();
    w.memoize();
    Written n;
    std::vector<std::pair<uint64_t, uint64_t>> made;  // segmented: address, size
    {
        Batcher list(w, false);
        n = segmented ? segmentedTrace(g, list, out, target_mb << 20, made)
            : churn   ? churnTrace(g, list, out, target_mb << 20)
                      : steadyTrace(g, list, out, target_mb << 20);
        list.finish();
    }
    devices.finish();
    if (segmented) {
        top.item();
        g.finalSegments(made);
    }

    top.item();
    g.key("allocator_settings");
    w.emptyDict();
    w.memoize();
    w.mark();
    g.key("PYTORCH_CUDA_ALLOC_CONF");
    w.string("");
    g.key("max_split_size");
    w.integer(-1);
    g.key("garbage_collection_threshold");
    w.floating(0.0);
    g.key("expandable_segments");
    w.boolean(false);
    w.setItems();
    top.finish();
    w.end();
    if (auto s = w.status(); !s.ok() || std::fclose(out) != 0) {
        std::fprintf(stderr, "write failed\n");
        return 1;
    }
    size_t used = 0;
    for (bool u : g.stack_used) used += u ? 1 : 0;
    std::printf("wrote %s: %llu trace entries, %zu segments, %u frames in %u stacks\n",
                path.c_str(), (unsigned long long)n.entries,
                segmented ? made.size() : size_t(kSegments), kFrames, kStacks);
    std::printf("shape:        %s\n", shape.c_str());
    std::printf("entries:      %llu\n", (unsigned long long)n.entries);
    std::printf("allocations:  %llu (%llu freed)\n", (unsigned long long)n.allocations,
                (unsigned long long)n.freed);
    std::printf("peak live:    %llu allocations\n", (unsigned long long)n.peak_live);
    std::printf("stacks:       %zu distinct in the trace\n", used);
    return 0;
}
