#include "memscope/recording/recorded_ops.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace memscope {

RecordedOpsStats addRecordedOps(Trace& trace, const CapturedOps& ops) {
    RecordedOpsStats stats;
    if (ops.scopes.empty()) return stats;
    std::unordered_map<uint32_t, StringId> ids;  // the producer's id -> the trace's string
    ids.reserve(ops.names.size());
    for (const auto& [id, name] : ops.names) ids.emplace(id, trace.strings.intern(name));

    std::vector<OpScope> out;
    out.reserve(ops.scopes.size());
    for (const CapturedOp& s : ops.scopes) {
        auto it = ids.find(s.name);
        if (it == ids.end()) {
            ++stats.unknown_name;
            continue;
        }
        out.push_back({s.start, s.end, it->second, std::min(s.depth, kMaxOpDepth)});
    }
    auto key = [](const OpScope& s) {
        // Start first; on a tie the longer (enclosing) scope first.
        return std::tuple(s.start, -s.end, s.depth, s.name.value);
    };
    std::sort(out.begin(), out.end(),
              [&](const OpScope& a, const OpScope& b) { return key(a) < key(b); });
    out.erase(std::unique(out.begin(), out.end(),
                          [&](const OpScope& a, const OpScope& b) { return key(a) == key(b); }),
              out.end());
    stats.scopes = out.size();
    if (!out.empty()) trace.ops.source = OpSource::Recorded;
    trace.ops.scopes.insert(trace.ops.scopes.end(), out.begin(), out.end());
    return stats;
}

}  // namespace memscope
