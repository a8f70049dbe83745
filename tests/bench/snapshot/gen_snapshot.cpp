// Writes a large, realistic memory snapshot pickle laid out the way CPython's
// pickle.dump writes torch's: one dict per trace entry, a fresh frames list per
// entry whose frame dicts are shared through the memo (deep stacks with common
// prefixes), thousands of segments with blocks, allocator settings.
//   memscope-gen-snapshot OUT [--mb SIZE_MB] [--seed N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "pickle_writer.h"

namespace {

using memscope::pickle::Batcher;
using memscope::pickle::Writer;

struct Gen {
    Writer& w;
    std::mt19937_64 rng;
    std::unordered_map<std::string, uint32_t> keys;
    std::vector<uint32_t> frame_memo;  // frame index -> memo id (UINT32_MAX = not yet)
    std::vector<std::vector<uint32_t>> stacks;  // frame indexes, innermost first

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
        w.string((f % 7 == 0 ? "at::native::" : "torch::nn::functional::") + std::string("op_") + std::to_string(f) +
                 (f % 3 == 0 ? "(at::Tensor const&, c10::optional<at::Tensor> const&)" : ""));
        w.memoize();
        key("filename");
        w.string("/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module_" + std::to_string(f % 97) + ".py");
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
};

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s OUT [--mb SIZE_MB] [--seed N]\n", argv[0]);
        return 1;
    }
    uint64_t target_mb = 1024;
    uint64_t seed = 42;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--mb")) target_mb = std::strtoull(argv[i + 1], nullptr, 10);
        else if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    }
    std::FILE* out = std::fopen(argv[1], "wb");
    if (!out) {
        std::perror(argv[1]);
        return 1;
    }
    std::setvbuf(out, nullptr, _IOFBF, 1 << 20);
    Writer w(out);
    Gen g{w, std::mt19937_64(seed), {}, {}, {}};

    // 3000 distinct frames; 600 stacks 30..110 deep grown from shared prefixes
    // (a training loop: the outer frames are the same, the inner ones vary).
    constexpr uint32_t kFrames = 3000, kStacks = 600;
    g.frame_memo.assign(kFrames, UINT32_MAX);
    std::vector<uint32_t> outer(40);
    for (uint32_t i = 0; i < outer.size(); ++i) outer[i] = i;
    for (uint32_t s = 0; s < kStacks; ++s) {
        std::vector<uint32_t> st;
        const uint32_t inner = 10 + uint32_t(g.rng() % 70);
        for (uint32_t i = 0; i < inner; ++i) st.push_back(40 + uint32_t(g.rng() % (kFrames - 40)));
        const uint32_t keep = 20 + uint32_t(g.rng() % 21);
        st.insert(st.end(), outer.end() - keep, outer.end());
        g.stacks.push_back(std::move(st));
    }

    w.begin();
    w.emptyDict();
    w.memoize();
    Batcher top(w, true);

    // Segments: thousands, each tiled by a few blocks.
    top.item();
    g.key("segments");
    w.emptyList();
    w.memoize();
    {
        Batcher segs(w, false);
        uint64_t addr = 0x7f0000000000ull;
        for (int s = 0; s < 4000; ++s) {
            segs.item();
            const uint64_t total = (2ull << 20) * (1 + g.rng() % 16);
            w.emptyDict();
            w.memoize();
            w.mark();
            g.key("device"); w.integer(0);
            g.key("address"); w.unsignedInteger(addr);
            g.key("total_size"); w.unsignedInteger(total);
            g.key("allocated_size"); w.unsignedInteger(total / 2);
            g.key("active_size"); w.unsignedInteger(total / 2);
            g.key("requested_size"); w.unsignedInteger(total / 2);
            g.key("stream"); w.integer(0);
            g.key("segment_type"); g.key("large");
            g.key("segment_pool_id"); w.integer(0); w.integer(0); w.tuple2();
            g.key("is_expandable"); w.boolean(false);
            g.key("frames"); w.emptyList(); w.memoize();
            g.key("blocks");
            w.emptyList();
            w.memoize();
            Batcher blocks(w, false);
            uint64_t b = addr;
            for (int k = 0; k < 4; ++k) {
                blocks.item();
                w.emptyDict();
                w.memoize();
                w.mark();
                g.key("address"); w.unsignedInteger(b);
                g.key("size"); w.unsignedInteger(total / 4);
                g.key("requested_size"); w.unsignedInteger(total / 4 - 512);
                g.key("state"); g.key(k % 2 ? "inactive" : "active_allocated");
                g.key("frames");
                if (k % 2) { w.emptyList(); w.memoize(); }
                else g.frames(g.stacks[g.rng() % kStacks]);
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

    // One device trace with entries until the file reaches the target size.
    top.item();
    g.key("device_traces");
    w.emptyList();
    w.memoize();
    Batcher devices(w, false);
    devices.item();
    w.emptyList();
    w.memoize();
    uint64_t entries = 0;
    {
        Batcher list(w, false);
        std::vector<std::pair<uint64_t, uint64_t>> live;
        uint64_t next_addr = 0x7f8000000000ull, time_us = 1754641328380304ull;
        const uint64_t target = target_mb << 20;
        while (true) {
            if ((entries & 4095) == 0 && uint64_t(std::ftell(out)) >= target) break;
            const bool alloc = live.size() < 64 || (live.size() < 20000 && g.rng() % 2 == 0);
            uint64_t a, size;
            const char* action;
            if (alloc) {
                size = 512ull << (g.rng() % 16);
                a = next_addr;
                next_addr += size;
                live.emplace_back(a, size);
                action = "alloc";
            } else {
                const size_t i = size_t(g.rng() % live.size());
                std::tie(a, size) = live[i];
                live[i] = live.back();
                live.pop_back();
                action = "free_completed";
            }
            // free_requested then free_completed, as the caching allocator records them
            for (int pass = alloc ? 1 : 0; pass < 2; ++pass) {
                list.item();
                w.emptyDict();
                w.memoize();
                w.mark();
                g.key("action"); g.key(pass == 0 ? "free_requested" : action);
                g.key("addr"); w.unsignedInteger(a);
                g.key("size"); w.unsignedInteger(size);
                g.key("stream"); w.integer(0);
                g.key("time_us"); w.unsignedInteger(time_us += 1 + g.rng() % 50);
                g.key("frames"); g.frames(g.stacks[g.rng() % kStacks]);
                g.key("compile_context"); g.key("N/A");
                g.key("user_metadata"); g.key("");
                w.setItems();
                w.boundary();
                ++entries;
            }
        }
        list.finish();
    }
    devices.finish();

    top.item();
    g.key("allocator_settings");
    w.emptyDict();
    w.memoize();
    w.mark();
    g.key("PYTORCH_CUDA_ALLOC_CONF"); w.string("");
    g.key("max_split_size"); w.integer(-1);
    g.key("garbage_collection_threshold"); w.floating(0.0);
    g.key("expandable_segments"); w.boolean(false);
    w.setItems();
    top.finish();
    w.end();
    if (auto s = w.status(); !s.ok() || std::fclose(out) != 0) {
        std::fprintf(stderr, "write failed\n");
        return 1;
    }
    std::printf("wrote %s: %llu trace entries, 4000 segments, %u frames in %u stacks\n", argv[1],
                (unsigned long long)entries, kFrames, kStacks);
    return 0;
}
