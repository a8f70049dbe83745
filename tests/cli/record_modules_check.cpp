// Checks the module scopes of a trace `memscope-cli record` made of
// record_scripts/train_blocks.py (4 blocks, 1 and 3 checkpointed, N steps),
// through the core API: run by record_modules_test.py.
//
// usage: memscope_record_modules_check TRACE layers STEPS
//        memscope_record_modules_check TRACE depth MAX_PATH_DEPTH
//        memscope_record_modules_check TRACE none
//
//   layers  every block has one forward scope per step with its children
//           inside; the checkpointed blocks one recompute scope per step;
//           the activation bytes of each block that is not checkpointed equal
//           the bytes born in its forward scopes and freed in backward (from
//           the raw events); the peak's bytes by layer add up to the peak.
//   depth   no module deeper than MAX_PATH_DEPTH path components
//   none    the trace has no modules
// Prints what it found; exits 1 with "FAIL: ..." lines when a check fails.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "memscope/model/module_attribution.h"
#include "memscope/open/open_run.h"

namespace {

using namespace memscope;

int failures = 0;

void check(bool ok, const std::string& what) {
    if (!ok) {
        std::printf("FAIL: %s\n", what.c_str());
        ++failures;
    }
}

bool inAny(int64_t t, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
    return std::any_of(ranges.begin(), ranges.end(),
                       [&](const auto& r) { return t >= r.first && t < r.second; });
}

const Module* byPath(const Trace& trace, std::string_view path, ModuleId* id = nullptr) {
    for (size_t i = 0; i < trace.modules.modules.size(); ++i)
        if (trace.string(trace.modules.modules[i].path) == path) {
            if (id) *id = ModuleId(uint32_t(i + 1));
            return &trace.modules.modules[i];
        }
    return nullptr;
}

std::vector<std::pair<int64_t, int64_t>> scopesOf(const Trace& trace, ModuleId id,
                                                  ModuleScopeKind kind) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const ModuleScope& s : trace.modules.scopes)
        if (s.module == id && s.kind == kind) out.emplace_back(s.start, s.end);
    return out;
}

// Bytes of the allocations born in `born` and freed in `freed`, pairing the
// raw alloc / free_completed events by address (not the timeline's intervals).
int64_t bornAndFreed(const Trace& trace, int16_t device,
                     const std::vector<std::pair<int64_t, int64_t>>& born,
                     const std::vector<std::pair<int64_t, int64_t>>& freed) {
    std::map<uint64_t, const Event*> live;
    int64_t bytes = 0;
    for (const Event& e : trace.events) {
        if (e.device != device) continue;
        if (e.kind == EventKind::Alloc) {
            live[e.address] = &e;
        } else if (e.kind == EventKind::FreeCompleted) {
            auto it = live.find(e.address);
            if (it == live.end()) continue;
            if (inAny(it->second->time, born) && inAny(e.time, freed))
                bytes += int64_t(it->second->size);
            live.erase(it);
        }
    }
    return bytes;
}

void checkLayers(const Trace& trace, const Timeline& timeline, int steps) {
    const ModuleAttribution attribution(trace);
    check(trace.metadata.property("modules") != nullptr,
          "the trace does not say where its modules come from (metadata \"modules\")");
    std::vector<std::pair<int64_t, int64_t>> backward;
    for (const Phase& p : trace.phases)
        if (p.kind == PhaseKind::Backward) backward.emplace_back(p.start, p.end);
    check(int(backward.size()) == steps, "expected " + std::to_string(steps) +
                                             " backward phases, found " +
                                             std::to_string(backward.size()));
    const DeviceTimeline* host = timeline.device(-1);
    check(host != nullptr, "no CPU timeline");
    if (!host) return;

    for (int k = 0; k < 4; ++k) {
        const std::string path = "blocks." + std::to_string(k);
        const bool checkpointed = k == 1 || k == 3;
        ModuleId id;
        if (!byPath(trace, path, &id)) {
            check(false, "no module " + path);
            continue;
        }
        const auto forward = scopesOf(trace, id, ModuleScopeKind::Forward);
        const auto recompute = scopesOf(trace, id, ModuleScopeKind::Recompute);
        check(int(forward.size()) == steps, path + ": " + std::to_string(forward.size()) +
                                                " forward scopes, expected one per step");
        check(int(recompute.size()) == (checkpointed ? steps : 0),
              path + ": " + std::to_string(recompute.size()) + " recompute scopes, expected " +
                  std::to_string(checkpointed ? steps : 0));
        for (const char* child : {".attn", ".attn.q", ".attn.proj", ".mlp", ".mlp.0", ".ln1"}) {
            ModuleId c;
            const Module* m = byPath(trace, path + child, &c);
            check(m != nullptr, "no module " + path + child);
            if (!m) continue;
            check(moduleWithin(trace, c, id), path + child + " is not nested in " + path);
            // Each of its forward scopes lies inside one of its block's.
            for (const auto& [s, e] : scopesOf(trace, c, ModuleScopeKind::Forward))
                check(std::any_of(forward.begin(), forward.end(),
                                  [&](const auto& f) { return f.first <= s && e <= f.second; }),
                      path + child + ": a forward scope outside every forward scope of " + path);
        }

        // Activation bytes the attribution gives the block, against the bytes
        // born in its forward and freed in backward, counted from the events.
        int64_t attributed = 0, forward_born = 0;
        for (const AllocationInterval& a : host->intervals) {
            if (a.alloc_event == kNoEvent) continue;
            const auto hit = attribution.at(a.start);
            if (!hit || !moduleWithin(trace, hit->module, id)) continue;
            if (a.category == Category::Activation) attributed += int64_t(a.size);
            if (hit->kind == ModuleScopeKind::Forward && a.category == Category::Activation)
                forward_born += int64_t(a.size);
        }
        const int64_t independent = bornAndFreed(trace, -1, forward, backward);
        std::printf(
            "%-9s %s forward %zu recompute %zu  activation %lld B (born in forward %lld B; "
            "born in forward, freed in backward %lld B)\n",
            path.c_str(), checkpointed ? "checkpointed" : "            ", forward.size(),
            recompute.size(), (long long)attributed, (long long)forward_born,
            (long long)independent);
        if (!checkpointed) {
            check(independent > 0, path + ": nothing born in its forward was freed in backward");
            check(attributed == independent,
                  path + ": " + std::to_string(attributed) + " activation bytes attributed, but " +
                      std::to_string(independent) +
                      " B were born in its forward scopes and freed in backward");
        }
    }

    // The peak by layer.
    std::map<std::string, int64_t> by_layer;
    int64_t sum = 0;
    for (uint32_t i : host->peak.live_intervals) {
        const AllocationInterval& a = host->intervals[i];
        std::optional<ModuleHit> hit;
        if (a.alloc_event != kNoEvent) hit = attribution.at(a.start);
        const std::string layer =
            hit ? modulePath(trace, layerOf(trace, hit->module)) : "(outside modules)";
        by_layer[layer] += int64_t(a.size);
        sum += int64_t(a.size);
    }
    std::printf("peak %lld B by layer:\n", (long long)host->peak.bytes);
    for (const auto& [layer, bytes] : by_layer)
        std::printf("  %-18s %10lld B\n", layer.c_str(), (long long)bytes);
    check(sum == host->peak.bytes, "the layers at the peak hold " + std::to_string(sum) +
                                       " B, the peak is " + std::to_string(host->peak.bytes) +
                                       " B");
    for (int k = 0; k < 4; ++k)
        check(by_layer.count("blocks." + std::to_string(k)) > 0,
              "blocks." + std::to_string(k) + " holds nothing at the peak");
}

void checkDepth(const Trace& trace, int max_depth) {
    check(!trace.modules.empty(), "no modules");
    std::set<std::string> paths;
    for (const Module& m : trace.modules.modules) {
        const std::string_view path = trace.string(m.path);
        const int depth = path.empty() ? 0 : int(std::count(path.begin(), path.end(), '.')) + 1;
        paths.insert(std::string(path));
        check(depth <= max_depth,
              "module " + std::string(path) + " is deeper than " + std::to_string(max_depth));
    }
    std::printf("%zu modules, %zu scopes\n", trace.modules.modules.size(),
                trace.modules.scopes.size());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s TRACE layers STEPS | depth N | none\n", argv[0]);
        return 2;
    }
    auto opened = openTrace(argv[1], PluginRegistry());
    if (!opened) {
        std::printf("FAIL: %s\n", opened.message().c_str());
        return 1;
    }
    const Trace& trace = *opened->trace;
    const std::string what = argv[2];
    if (what == "layers" && argc == 4) {
        check(trace.modules.source == ModuleSource::Recorded, "the modules are not recorded");
        checkLayers(trace, *opened->timeline, std::atoi(argv[3]));
    } else if (what == "depth" && argc == 4) {
        checkDepth(trace, std::atoi(argv[3]));
    } else if (what == "none") {
        check(trace.modules.empty() && trace.modules.scopes.empty(),
              "the trace has " + std::to_string(trace.modules.modules.size()) + " modules");
    } else {
        std::fprintf(stderr, "unknown check %s\n", what.c_str());
        return 2;
    }
    return failures == 0 ? 0 : 1;
}
