#include "memscope/recording/hook_log.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <unordered_set>

#include "memscope/base/file_io.h"
#include "memscope/model/op_scopes.h"

namespace memscope {
namespace {

using Value = rapidjson::Value;

std::optional<int64_t> integer(const Value& o, const char* key) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd() || !it->value.IsInt64()) return std::nullopt;
    return it->value.GetInt64();
}

std::string_view text(const Value& o, const char* key) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd() || !it->value.IsString()) return {};
    return {it->value.GetString(), it->value.GetStringLength()};
}

struct Seen {
    std::unordered_set<uint64_t> scope_batches;  // seq of the batches taken
    std::unordered_set<uint64_t> role_batches;   // seq of the tensor role batches taken
    std::unordered_set<uint32_t> modules;        // ids taken
    std::unordered_set<uint64_t> op_batches;     // seq of the op scope batches taken
};

// A JSON number as an unsigned 64-bit integer (addresses above INT64_MAX
// are valid); none for anything else.
std::optional<uint64_t> unsignedOf(const Value& v) {
    if (!v.IsUint64()) return std::nullopt;
    return v.GetUint64();
}

bool parseModule(const Value& d, HookLog& log, Seen& seen) {
    const auto id = integer(d, "id");
    if (!id || *id <= 0 || *id > int64_t(UINT32_MAX)) return false;
    if (!seen.modules.insert(uint32_t(*id)).second) return true;  // written twice
    log.modules.push_back({uint32_t(*id), std::string(text(d, "root")),
                           std::string(text(d, "path")), std::string(text(d, "class"))});
    return true;
}

bool parseModuleScopes(const Value& d, HookLog& log, Seen& seen) {
    const auto base = integer(d, "base_ns");
    auto flat = d.FindMember("s");
    if (!base || *base < 0 || flat == d.MemberEnd() || !flat->value.IsArray()) return false;
    if (const auto seq = integer(d, "seq"); seq && !seen.scope_batches.insert(*seq).second)
        return true;  // the same batch written again (a signal handler's flush)
    const auto& s = flat->value;
    const rapidjson::SizeType n = s.Size();
    log.bad_module_scopes += n % 4 > 0 ? 1 : 0;  // a group cut short
    for (rapidjson::SizeType i = 0; i + 4 <= n; i += 4) {
        int64_t start = 0, end = 0;
        std::optional<HookModuleScope> scope;
        if (s[i].IsInt64() && s[i + 1].IsInt64() && s[i + 2].IsInt64() && s[i + 3].IsInt64() &&
            !__builtin_add_overflow(*base, s[i].GetInt64(), &start) &&
            !__builtin_add_overflow(start, s[i + 1].GetInt64(), &end))
            scope = hookModuleScope(start, end, s[i + 2].GetInt64(), s[i + 3].GetInt64());
        if (scope)
            log.module_scopes.push_back(*scope);
        else
            ++log.bad_module_scopes;
    }
    return true;
}

bool parseOpName(const Value& d, HookLog& log) {
    const auto id = integer(d, "id");
    auto name = d.FindMember("name");
    if (!id || *id <= 0 || *id > int64_t(UINT32_MAX) || name == d.MemberEnd() ||
        !name->value.IsString() || name->value.GetStringLength() > kMaxCaptureOpName)
        return false;
    if (log.ops.names.size() >= kMaxCaptureOpNames) return false;
    log.ops.names.try_emplace(uint32_t(*id), text(d, "name"));  // written twice: the first
    return true;
}

// Scopes naming an op the log has not defined yet are kept here and checked
// at the end (a batch and its names come in one flush, names first).
bool parseOpScopes(const Value& d, HookLog& log, Seen& seen) {
    const auto base = integer(d, "base_ns");
    auto flat = d.FindMember("s");
    if (!base || *base < 0 || flat == d.MemberEnd() || !flat->value.IsArray()) return false;
    if (const auto seq = integer(d, "seq"); seq && !seen.op_batches.insert(*seq).second)
        return true;  // the same batch written again (a signal handler's flush)
    const auto& s = flat->value;
    const rapidjson::SizeType n = s.Size();
    log.ops.bad += n % 4 > 0 ? 1 : 0;  // a group cut short
    for (rapidjson::SizeType i = 0; i + 4 <= n; i += 4) {
        int64_t start = 0, end = 0;
        if (!s[i].IsInt64() || !s[i + 1].IsInt64() || !s[i + 2].IsInt64() || !s[i + 3].IsInt64() ||
            s[i + 1].GetInt64() < 0 || s[i + 2].GetInt64() <= 0 ||
            s[i + 2].GetInt64() > int64_t(UINT32_MAX) || s[i + 3].GetInt64() < 0 ||
            __builtin_add_overflow(*base, s[i].GetInt64(), &start) ||
            __builtin_add_overflow(start, s[i + 1].GetInt64(), &end)) {
            ++log.ops.bad;
            continue;
        }
        log.ops.scopes.push_back({start, end, uint32_t(s[i + 2].GetInt64()),
                                  uint16_t(std::min<int64_t>(s[i + 3].GetInt64(), kMaxOpDepth))});
    }
    return true;
}

// {"t": "tensor_roles", "role", "time_ns", "s": [device, address, bytes, ...]}.
bool parseTensorRoles(const Value& d, HookLog& log, Seen& seen) {
    const auto time = integer(d, "time_ns");
    auto flat = d.FindMember("s");
    auto role_name = d.FindMember("role");
    if (!time || *time < 0 || flat == d.MemberEnd() || !flat->value.IsArray() ||
        role_name == d.MemberEnd() || !role_name->value.IsString())
        return false;
    const auto role = tensorRoleFromString(text(d, "role"));
    if (!role) return true;  // a role a newer hook records: not damage
    if (const auto seq = integer(d, "seq"); seq && !seen.role_batches.insert(*seq).second)
        return true;  // the same batch written again (a signal handler's flush)
    const auto& s = flat->value;
    const rapidjson::SizeType n = s.Size();
    log.bad_tensor_roles += n % 3 > 0 ? 1 : 0;  // a group cut short
    for (rapidjson::SizeType i = 0; i + 3 <= n; i += 3) {
        const auto address = unsignedOf(s[i + 1]);
        const auto bytes = unsignedOf(s[i + 2]);
        if (!s[i].IsInt64() || s[i].GetInt64() < -1 || s[i].GetInt64() > INT16_MAX || !address ||
            *address == 0 || !bytes || *bytes == 0) {
            ++log.bad_tensor_roles;
            continue;
        }
        log.tensor_roles.push_back({*time, *address, *bytes, int16_t(s[i].GetInt64()), *role});
    }
    return true;
}

// False when the line is not a record this reader knows.
bool parseLine(std::string_view line, HookLog& log, Seen& seen) {
    rapidjson::Document d;
    d.Parse(line.data(), line.size());
    if (d.HasParseError() || !d.IsObject()) return false;
    const std::string_view type = text(d, "t");
    if (type == "phase") {
        const auto kind = hookPhaseKindFromString(text(d, "kind"));
        const auto start = integer(d, "start_ns"), end = integer(d, "end_ns");
        const auto seq = integer(d, "seq");
        if (!kind || !start || !end || !seq || *start < 0 || *end < *start || *seq <= 0)
            return false;
        HookLogRecordPhase r;
        r.seq = uint64_t(*seq);
        r.phase.kind = *kind;
        r.phase.step = int32_t(std::clamp<int64_t>(integer(d, "step").value_or(-1), -1, INT32_MAX));
        r.phase.start_ns = *start;
        r.phase.end_ns = *end;
        log.phases.push_back(r);
        return true;
    }
    if (type == "capture") {
        const auto time = integer(d, "time_ns");
        auto on = d.FindMember("on");
        if (!time || *time < 0 || on == d.MemberEnd() || !on->value.IsBool()) return false;
        log.capture.push_back({*time, on->value.GetBool()});
        return true;
    }
    if (type == "nvtx_range") {
        const auto start = integer(d, "start_ns"), end = integer(d, "end_ns");
        if (!start || !end || *start < 0 || *end < *start) return false;
        log.nvtx_ranges.push_back({std::string(text(d, "name")), *start, *end});
        return true;
    }
    if (type == "oom") {
        const auto time = integer(d, "time_ns");
        if (!time || *time < 0) return false;
        log.ooms.push_back(
            {*time, int32_t(std::clamp<int64_t>(integer(d, "device").value_or(-1), -1, INT16_MAX)),
             integer(d, "bytes").value_or(0)});
        return true;
    }
    if (type == "module") return parseModule(d, log, seen);
    if (type == "module_scopes") return parseModuleScopes(d, log, seen);
    if (type == "tensor_roles") return parseTensorRoles(d, log, seen);
    if (type == "op") return parseOpName(d, log);
    if (type == "op_scopes") return parseOpScopes(d, log, seen);
    // A record type a newer hook writes: not damage.
    return !type.empty();
}

bool holdsTraining(HookPhaseKind k) {
    return k == HookPhaseKind::Backward || k == HookPhaseKind::Optimizer ||
           k == HookPhaseKind::Recompute;
}

}  // namespace

namespace {

void takeLine(std::string_view line, bool last_cut, HookLog& log, Seen& seen) {
    if (line.empty()) return;
    if (!parseLine(line, log, seen)) {
        if (last_cut)
            log.cut_short = true;
        else
            ++log.damaged_lines;
    }
}

void finishLog(HookLog& log) {
    // A signal handler can write lines the main thread then writes again:
    // the sequence number makes them one.
    std::stable_sort(log.phases.begin(), log.phases.end(),
                     [](const auto& a, const auto& b) { return a.seq < b.seq; });
    log.phases.erase(std::unique(log.phases.begin(), log.phases.end(),
                                 [](const auto& a, const auto& b) { return a.seq == b.seq; }),
                     log.phases.end());
}

}  // namespace

HookLog parseHookLog(std::string_view all) {
    HookLog log;
    Seen seen;
    size_t pos = 0;
    while (pos < all.size()) {
        size_t end = all.find('\n', pos);
        const bool last_cut = end == std::string_view::npos;
        if (last_cut) end = all.size();
        takeLine(all.substr(pos, end - pos), last_cut, log, seen);
        pos = end + 1;
    }
    finishLog(log);
    return log;
}

Result<HookLog> readHookLog(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return HookLog{};  // no phase ever closed
    // Streamed a line at a time through the guarded open (a FIFO or a device
    // is refused, not waited on or read forever); a line past the cap is
    // damage, skipped without being kept.
    HookLog log;
    Seen seen;
    auto read = forEachLine(path, kMaxHookLogLine, kMaxHookLogBytes, "the hook log",
                            [&](const FileLine& l) -> Result<void> {
                                if (l.too_long) {
                                    if (l.cut)
                                        log.cut_short = true;
                                    else
                                        ++log.damaged_lines;
                                    return {};
                                }
                                takeLine(l.text, l.cut, log, seen);
                                return {};
                            });
    if (!read) return read.error();
    finishLog(log);
    return log;
}

std::vector<HookPhase> resolveHookPhases(const std::vector<HookLogRecordPhase>& records,
                                         const std::vector<HookPhase>& open_at_exit) {
    std::map<int32_t, HookPhase> steps;  // by number
    std::vector<HookPhase> inner;
    auto take = [&](const HookPhase& p) {
        if (p.kind == HookPhaseKind::Step) {
            if (p.step < 0) return;
            steps.erase(steps.lower_bound(p.step), steps.end());
            steps[p.step] = p;
        } else {
            inner.push_back(p);
        }
    };
    for (const HookLogRecordPhase& r : records) take(r.phase);
    for (const HookPhase& p : open_at_exit) take(p);

    std::sort(inner.begin(), inner.end(),
              [](const HookPhase& a, const HookPhase& b) { return a.start_ns < b.start_ns; });
    // What follows the last step.
    const int64_t last_end = steps.empty() ? INT64_MIN : steps.rbegin()->second.end_ns;
    const auto tail = std::find_if(inner.begin(), inner.end(),
                                   [&](const HookPhase& p) { return p.start_ns >= last_end; });
    const bool trained_in_tail =
        std::any_of(tail, inner.end(), [](const HookPhase& p) { return holdsTraining(p.kind); });
    const bool trained_ever =
        !steps.empty() || std::any_of(inner.begin(), inner.end(),
                                      [](const HookPhase& p) { return holdsTraining(p.kind); });
    // Without training, a step needs a forward (zero_grad calls alone are none).
    const bool forward_in_tail = std::any_of(
        tail, inner.end(), [](const HookPhase& p) { return p.kind == HookPhaseKind::Forward; });
    if (tail != inner.end()) {
        if (trained_in_tail || (!trained_ever && forward_in_tail)) {
            HookPhase extra;
            extra.kind = HookPhaseKind::Step;
            extra.step = steps.empty() ? 0 : steps.rbegin()->first + 1;
            extra.start_ns = tail->start_ns;
            extra.end_ns = tail->end_ns;
            for (auto it = tail; it != inner.end(); ++it)
                extra.end_ns = std::max(extra.end_ns, it->end_ns);
            steps[extra.step] = extra;
        } else if (!steps.empty()) {
            // zero_grad calls before any forward of the tail end the last step's iteration.
            HookPhase& last = steps.rbegin()->second;
            for (auto it = tail; it != inner.end() && it->kind == HookPhaseKind::ZeroGrad; ++it)
                last.end_ns = std::max(last.end_ns, it->end_ns);
        }
    }

    std::vector<HookPhase> out;
    out.reserve(steps.size() + inner.size());
    for (auto& [n, s] : steps) out.push_back(s);
    // Each inner phase takes the number of the step that holds it.
    std::vector<HookPhase> ordered_steps = out;
    for (HookPhase p : inner) {
        auto it = std::upper_bound(ordered_steps.begin(), ordered_steps.end(), p.start_ns,
                                   [](int64_t t, const HookPhase& s) { return t < s.start_ns; });
        p.step = -1;
        if (it != ordered_steps.begin()) {
            const HookPhase& s = *(it - 1);
            if (p.start_ns >= s.start_ns && p.end_ns <= s.end_ns) p.step = s.step;
        }
        out.push_back(p);
    }
    std::stable_sort(out.begin(), out.end(), [](const HookPhase& a, const HookPhase& b) {
        if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
        if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
        return a.kind == HookPhaseKind::Step && b.kind != HookPhaseKind::Step;
    });
    return out;
}

}  // namespace memscope
