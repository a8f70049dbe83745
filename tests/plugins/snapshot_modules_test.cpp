// Modules through a memory snapshot: recorded module scopes survive `convert`
// (external_annotations) and come back recorded; without them, the layers
// inferred from the Python frames hold the peak's activations where the
// recording said; the real fixtures' layers; hostile frames stay bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gpt_trace_builder.h"
#include "memscope/inference/inference.h"
#include "memscope/inference/module_inference.h"
#include "memscope/model/module_attribution.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "test_util.h"

namespace memscope {
namespace {

using Scope = std::tuple<std::string, std::string, int64_t, int64_t>;  // path, kind, start, end

std::multiset<Scope> scopesOf(const Trace& t) {
    std::multiset<Scope> out;
    for (const ModuleScope& s : t.modules.scopes)
        out.insert({modulePath(t, s.module), std::string(toString(s.kind)), s.start, s.end});
    return out;
}

Trace roundTrip(const Trace& trace, const std::string& name) {
    const auto path = test::tempPath(name);
    auto written = pytorch_snapshot::exportFile(trace, path.string());
    EXPECT_TRUE(written.ok()) << written.message();
    auto back = pytorch_snapshot::importFile(path.string());
    EXPECT_TRUE(back.ok()) << back.message();
    return back.ok() ? std::move(*back) : Trace();
}

TEST(SnapshotModules, RecordedScopesSurviveExportAndImport) {
    for (bool checkpoint : {false, true}) {
        const Trace recorded = test::GptTraceBuilder({6, 2, checkpoint}).build();
        ASSERT_GT(recorded.modules.scopes.size(), 100u);
        const Trace back = roundTrip(recorded, "modules.pickle");
        EXPECT_EQ(back.modules.source, ModuleSource::Recorded);
        EXPECT_EQ(scopesOf(back), scopesOf(recorded));
        // Types come back, and no module mark became a phase or an annotation.
        for (const ModuleScope& s : back.modules.scopes) {
            if (modulePath(back, s.module) != "h.3.attn") continue;
            EXPECT_EQ(back.string(back.modules.module(s.module)->type), "CausalSelfAttention");
        }
        EXPECT_TRUE(back.phases.empty());
        EXPECT_TRUE(back.annotations.empty());
        // A second export writes the same marks again (no duplicates).
        const Trace again = roundTrip(back, "modules-again.pickle");
        EXPECT_EQ(scopesOf(again), scopesOf(recorded));
    }
}

// Activation bytes live at the peak (the first time live bytes are highest),
// by alloc event index.
std::vector<uint64_t> activationsAtPeak(const Trace& t) {
    std::unordered_map<uint64_t, uint64_t> live;  // address -> alloc event
    uint64_t bytes = 0, peak = 0;
    std::vector<uint64_t> at_peak;
    for (uint64_t i = 0; i < t.events.size(); ++i) {
        const Event& e = t.events[i];
        if (e.kind == EventKind::Alloc) {
            live[e.address] = i;
            bytes += e.size;
            if (bytes > peak) {
                peak = bytes;
                at_peak.clear();
                for (const auto& [a, ev] : live)
                    if (t.events[ev].category == Category::Activation) at_peak.push_back(ev);
            }
        } else if (e.kind == EventKind::FreeCompleted) {
            if (auto it = live.find(e.address); it != live.end()) {
                bytes -= t.events[it->second].size;
                live.erase(it);
            }
        }
    }
    return at_peak;
}

std::string layerAt(const Trace& t, const ModuleAttribution& attribution, int64_t time) {
    const auto hit = attribution.at(time);
    return hit ? modulePath(t, layerOf(t, hit->module)) : std::string("(none)");
}

// The number a numbered layer ends with ("h.3", "….forward@model:100.3"), or -1.
int layerNumber(const std::string& path) {
    const std::string_view last = lastPathComponent(path);
    if (last.empty() || !std::all_of(last.begin(), last.end(), ::isdigit)) return -1;
    return std::stoi(std::string(last));
}

// Of the activation bytes at the peak, the share whose inferred layer is the
// recorded one: numbered layers by their number (h.3 is instance 3), the
// others by the inferred layer most of their bytes went to.
double sameLayerShare(const Trace& recorded, const Trace& inferred) {
    const ModuleAttribution truth(recorded), found(inferred);
    std::vector<std::pair<std::string, std::string>> pairs;  // recorded, inferred
    std::vector<uint64_t> sizes;
    for (uint64_t ev : activationsAtPeak(recorded)) {
        pairs.emplace_back(layerAt(recorded, truth, recorded.events[ev].time),
                           layerAt(inferred, found, inferred.events[ev].time));
        sizes.push_back(recorded.events[ev].size);
    }
    std::map<std::string, std::map<std::string, uint64_t>> votes;
    for (size_t i = 0; i < pairs.size(); ++i) votes[pairs[i].first][pairs[i].second] += sizes[i];
    uint64_t same = 0, all = 0;
    std::map<std::string, std::string> printed;
    for (size_t i = 0; i < pairs.size(); ++i) {
        const auto& [want, got] = pairs[i];
        all += sizes[i];
        bool ok = false;
        if (layerNumber(want) >= 0) {
            ok = layerNumber(want) == layerNumber(got);
        } else {
            const auto& v = votes[want];
            ok = std::max_element(v.begin(), v.end(), [](auto& a, auto& b) {
                     return a.second < b.second;
                 })->first == got;
        }
        same += ok ? sizes[i] : 0;
        printed.try_emplace(want, got);
    }
    for (const auto& [want, got] : printed)
        std::printf("  %-8s <- %s\n", want.c_str(), got.c_str());
    return all ? double(same) / double(all) : 0.0;
}

TEST(SnapshotModules, LayersInferredFromFramesHoldThePeakWhereRecorded) {
    for (bool checkpoint : {false, true}) {
        const Trace recorded = test::GptTraceBuilder({6, 2, checkpoint}).build();
        Trace without = recorded;
        without.modules = ModuleTable();
        Trace back = roundTrip(without, "no-modules.pickle");
        ASSERT_EQ(back.events.size(), recorded.events.size());
        ASSERT_EQ(back.modules.source, ModuleSource::None);
        const InferenceReport report = inferMissingLabels(back);
        EXPECT_EQ(report.modules.source, ModuleSource::Inferred);
        EXPECT_EQ(back.modules.source, ModuleSource::Inferred);
        // The blocks, and wte, wpe, ln_f, lm_head, the model itself.
        std::printf("checkpoint %s: %zu layers, %zu modules, %zu scopes\n",
                    checkpoint ? "on" : "off", report.modules.layers, report.modules.modules,
                    report.modules.scopes);
        EXPECT_GE(report.modules.layers, 6u);
        const double share = sameLayerShare(recorded, back);
        std::printf("  activation bytes at the peak in the recorded layer: %.1f%%\n", share * 100);
        EXPECT_GE(share, 0.95);
        // Recompute scopes exist with checkpointing, with the forward's paths.
        std::set<std::string> forward, recompute;
        for (const ModuleScope& s : back.modules.scopes)
            (s.kind == ModuleScopeKind::Recompute ? recompute : forward)
                .insert(modulePath(back, s.module));
        if (checkpoint) {
            EXPECT_FALSE(recompute.empty());
            for (const std::string& p : recompute) EXPECT_TRUE(forward.count(p)) << p;
        } else {
            EXPECT_TRUE(recompute.empty());
        }
    }
}

// Every fixture with Python frames: the layers found, printed; counted where
// the frames say how many (the expected figures are about bytes, not layers).
TEST(SnapshotModules, FixtureLayers) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    for (const auto& entry : std::filesystem::directory_iterator(test::fixtures() / "snapshots")) {
        const std::string name = entry.path().filename().string();
        if (entry.path().extension() != ".pickle" && entry.path().extension() != ".pkl") continue;
        auto trace = pytorch_snapshot::importFile(entry.path().string());
        ASSERT_TRUE(trace.ok()) << name << ": " << trace.message();
        const InferenceReport report = inferMissingLabels(*trace);
        const ModuleInferenceReport& m = report.modules;
        std::map<std::string, size_t> layers;  // path -> scopes
        for (const ModuleScope& s : trace->modules.scopes)
            ++layers[modulePath(*trace, layerOf(*trace, s.module))];
        std::printf("%s: %s, %zu layers, %zu modules, %zu scopes\n", name.c_str(),
                    std::string(toString(m.source)).c_str(), m.layers, m.modules, m.scopes);
        size_t shown = 0;
        for (const auto& [path, n] : layers)
            if (shown++ < 12) std::printf("    %s (%zu scopes)\n", path.c_str(), n);
        EXPECT_EQ(m.layers, layers.size()) << name;
        // Numbered layers by class ("….forward@modeling_bert:497" -> 24
        // instances): numbered 0..n-1 without a gap, as entered in order.
        std::map<std::string, std::set<int>> classes;
        for (const auto& [path, n] : layers)
            if (const size_t dot = path.rfind('.');
                dot != std::string::npos && layerNumber(path) >= 0)
                classes[path.substr(0, dot)].insert(layerNumber(path));
        // The stacks' layer counts, which match each model: BERT-large's 24
        // encoder layers, Qwen3's 28 decoder layers (under DataParallel), a
        // 12-block GPT (torch.compile'd), the 36 blocks of the cs336 model.
        static const std::map<std::string, std::pair<std::string, size_t>> kKnown = {
            {"no_time_us_deep_stacks__Maphsge4_select_n.pickle", {"forward@modeling_bert:497", 24}},
            {"expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle",
             {"forward@modeling_qwen3:255", 28}},
            {"user_metadata_compile_ctx__bcrafton_a2.pickle", {"forward@model:368", 12}},
            {"ext_annotations_19k_entries__notHanmin_a2.pickle", {"forward@adapters:448", 36}},
        };
        if (auto known = kKnown.find(name); known != kKnown.end()) {
            size_t found = 0;
            for (const auto& [cls, numbers] : classes)
                if (cls.ends_with(known->second.first)) found = numbers.size();
            EXPECT_EQ(found, known->second.second) << name;
        }
        for (const auto& [cls, numbers] : classes) {
            std::printf("    class %s: %zu instances\n", cls.c_str(), numbers.size());
            EXPECT_EQ(*numbers.rbegin() + 1, int(numbers.size())) << name << ": " << cls;
        }
        // Module calls in the stacks of allocations (an end state's blocks
        // alone tell no times).
        bool module_frames = false;
        for (const Event& e : trace->events) {
            if (e.kind != EventKind::Alloc || module_frames) continue;
            for (FrameId f : trace->stack(e.stack))
                module_frames |=
                    trace->string(trace->frame(f).file).ends_with("torch/nn/modules/module.py");
        }
        if (!module_frames) {
            EXPECT_EQ(m.source, ModuleSource::None) << name;
            continue;
        }
        EXPECT_EQ(m.source, ModuleSource::Inferred) << name;
        EXPECT_GT(m.layers, 0u) << name;
        for (const ModuleScope& s : trace->modules.scopes) EXPECT_LT(s.start, s.end) << name;
    }
}

// Hostile frames through a snapshot: 10,000 nested module calls, 100,000
// distinct callees, a 1 MiB function name. The caps hold: levels, nodes,
// path bytes, module depth.
TEST(SnapshotModules, HostileFramesStayBounded) {
    Trace t;
    t.metadata.time_base = TimeBase::Nanoseconds;
    const std::string module_py = "/x/torch/nn/modules/module.py";
    auto frame = [&](const std::string& fn, const std::string& file, uint32_t line) {
        return t.internFrame({t.internString(fn), t.internString(file), line});
    };
    const FrameId wrapper = frame("_call_impl", module_py, 1527);
    int64_t now = test::GptTraceBuilder::kT0;
    uint64_t address = 0x1000;
    auto alloc = [&](const std::vector<FrameId>& outermost_first) {
        std::vector<FrameId> inner(outermost_first.rbegin(), outermost_first.rend());
        Event e;
        e.time = now;
        now += 1000;
        e.address = address;
        address += 512;
        e.size = 512;
        e.stack = t.internStack(inner);
        t.events.push_back(e);
    };
    // 10,000 levels deep, each callee its own forward.
    std::vector<FrameId> deep{frame("main", "/u/train.py", 1)};
    for (int i = 0; i < 10000; ++i) {
        deep.push_back(wrapper);
        deep.push_back(frame("forward", "/u/m" + std::to_string(i) + ".py", 10));
    }
    alloc(deep);
    // 100,000 distinct callees called from one site.
    for (int i = 0; i < 100000; ++i)
        alloc({frame("main", "/u/train.py", 2), wrapper,
               frame("f" + std::to_string(i), "/u/a.py", 3)});
    // A 1 MiB callee name, and a 1 MiB file.
    const std::string huge(1 << 20, 'n');
    alloc({frame("main", "/u/train.py", 3), wrapper, frame(huge, "/u/" + huge + ".py", 4)});

    Trace back = roundTrip(t, "hostile-modules.pickle");
    ASSERT_EQ(back.events.size(), t.events.size());
    const ModuleInferenceReport report = inferModules(back);
    EXPECT_EQ(report.source, ModuleSource::Inferred);
    EXPECT_TRUE(report.capped);
    // The node cap (2^16) bounds the modules; each has a bounded path.
    EXPECT_LE(back.modules.modules.size(), size_t(1) << 17);
    size_t deepest = 0, longest = 0;
    for (uint32_t id = 1; id <= back.modules.modules.size(); ++id) {
        const Module& m = back.modules.modules[id - 1];
        deepest = std::max<size_t>(deepest, m.depth);
        longest = std::max(longest, back.string(m.path).size() + back.string(m.root).size());
        EXPECT_LE(back.string(m.type).size(), 256u);
    }
    EXPECT_LT(deepest, 64u);
    EXPECT_LE(longest, kMaxModulePathBytes + 256);
    EXPECT_LE(back.modules.scopes.size(), t.events.size() * 64);
    std::printf("hostile: %zu modules, deepest %zu, longest path %zu bytes, %zu scopes\n",
                back.modules.modules.size(), deepest, longest, back.modules.scopes.size());
}

}  // namespace
}  // namespace memscope
