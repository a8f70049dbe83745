#include "memscope/recording/hook_sidecar.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <sstream>

#include "memscope/base/file_io.h"

namespace memscope {
namespace {

// hook.json is small (phases of a run: ~100 bytes per phase); anything far
// larger is not ours.
constexpr size_t kMaxSidecarBytes = size_t(512) << 20;

using Value = rapidjson::Value;

std::string_view str(const Value& v) {
    return v.IsString() ? std::string_view(v.GetString(), v.GetStringLength()) : "";
}

int64_t integer(const Value& object, const char* key, int64_t fallback) {
    auto it = object.FindMember(key);
    if (it == object.MemberEnd()) return fallback;
    if (it->value.IsInt64()) return it->value.GetInt64();
    return fallback;
}

std::string text(const Value& object, const char* key) {
    auto it = object.FindMember(key);
    return it == object.MemberEnd() ? std::string() : std::string(str(it->value));
}

bool boolean(const Value& object, const char* key) {
    auto it = object.FindMember(key);
    return it != object.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

const Value* array(const Value& object, const char* key) {
    auto it = object.FindMember(key);
    return it != object.MemberEnd() && it->value.IsArray() ? &it->value : nullptr;
}

// Phases of hook.json ("phases" in version 1, "open_phases" in 2): malformed
// ones are counted and left out.
size_t parsePhaseArray(const Value* phases, std::vector<HookPhase>& out) {
    size_t bad = 0;
    if (phases == nullptr) return 0;
    out.reserve(phases->Size());
    for (const Value& p : phases->GetArray()) {
        if (!p.IsObject()) {
            ++bad;
            continue;
        }
        const auto kind = hookPhaseKindFromString(text(p, "kind"));
        HookPhase phase;
        phase.step = int32_t(std::clamp<int64_t>(integer(p, "step", -1), -1, INT32_MAX));
        phase.start_ns = integer(p, "start_ns", -1);
        phase.end_ns = integer(p, "end_ns", -1);
        if (!kind || phase.start_ns < 0 || phase.end_ns < phase.start_ns) {
            ++bad;
            continue;
        }
        phase.kind = *kind;
        out.push_back(phase);
    }
    return bad;
}

// "open_module_scopes": [[start_ns, end_ns, module, kind], ...]; malformed
// ones are counted and left out.
size_t parseOpenModuleScopes(const Value* scopes, std::vector<HookModuleScope>& out) {
    size_t bad = 0;
    if (scopes == nullptr) return 0;
    for (const Value& s : scopes->GetArray()) {
        std::optional<HookModuleScope> scope;
        if (s.IsArray() && s.Size() == 4 && s[0].IsInt64() && s[1].IsInt64() && s[2].IsInt64() &&
            s[3].IsInt64())
            scope =
                hookModuleScope(s[0].GetInt64(), s[1].GetInt64(), s[2].GetInt64(), s[3].GetInt64());
        if (scope)
            out.push_back(*scope);
        else
            ++bad;
    }
    return bad;
}

// "modules": {"depth": N, "compile": str | null, "dropped_modules": n, ...}.
void parseModuleInfo(const Value& doc, HookModuleInfo& info) {
    auto it = doc.FindMember("modules");
    if (it == doc.MemberEnd() || !it->value.IsObject()) return;
    const Value& m = it->value;
    info.depth = int32_t(std::clamp<int64_t>(integer(m, "depth", -1), -1, INT32_MAX));
    info.compile = text(m, "compile");
    info.dropped_modules = uint64_t(std::max<int64_t>(0, integer(m, "dropped_modules", 0)));
    info.dropped_roots = uint64_t(std::max<int64_t>(0, integer(m, "dropped_roots", 0)));
}

// "apply": {"policy", "applied", "refused", "save_lists", "optimizer_in_backward",
// "checkpointed": [...], "sequential"} | null. Refused wins over applied: a
// document that claims both is not taken as applied.
void parseApply(const Value& doc, HookSidecar& s) {
    auto it = doc.FindMember("apply");
    if (it == doc.MemberEnd() || !it->value.IsObject()) return;
    const Value& a = it->value;
    HookApply apply;
    apply.policy = text(a, "policy");
    apply.refused = text(a, "refused");
    apply.applied = boolean(a, "applied") && apply.refused.empty();
    if (!apply.applied && apply.refused.empty()) apply.unused = text(a, "unused");
    apply.save_lists = text(a, "save_lists");
    apply.optimizer_in_backward = text(a, "optimizer_in_backward");
    apply.sequential = text(a, "sequential");
    if (const Value* wrapped = array(a, "checkpointed"))
        for (const Value& w : wrapped->GetArray())
            if (w.IsString()) apply.checkpointed.emplace_back(str(w));
    s.apply = std::move(apply);
}

// "capture": {"steps": [A, B]} | {"nvtx": NAME} | null.
Result<void> parseCapture(const Value& doc, HookSidecar& s, const std::string& path) {
    auto it = doc.FindMember("capture");
    if (it == doc.MemberEnd() || it->value.IsNull()) return {};
    const Value& c = it->value;
    if (!c.IsObject()) return makeError(path + ": \"capture\" is not an object");
    if (const Value* steps = array(c, "steps")) {
        if (steps->Size() != 2 || !(*steps)[0].IsInt() || !(*steps)[1].IsInt() ||
            (*steps)[0].GetInt() < 0 || (*steps)[1].GetInt() < (*steps)[0].GetInt())
            return makeError(path + ": \"capture\".\"steps\" is not [first, last]");
        s.capture_steps = {(*steps)[0].GetInt(), (*steps)[1].GetInt()};
    } else if (auto n = c.FindMember("nvtx"); n != c.MemberEnd() && n->value.IsString()) {
        s.capture_nvtx = std::string(str(n->value));
    }
    return {};
}

// A list of strings under `key`: absent -> empty; anything but a list of
// strings -> an error that says which.
Result<std::vector<std::string>> stringList(const Value& object, const char* key,
                                            const std::string& path) {
    std::vector<std::string> out;
    auto it = object.FindMember(key);
    if (it == object.MemberEnd()) return out;
    if (!it->value.IsArray()) return makeError(path + ": \"" + key + "\" is not a list of strings");
    for (rapidjson::SizeType i = 0; i < it->value.Size(); ++i) {
        const Value& v = it->value[i];
        if (!v.IsString())
            return makeError(path + ": \"" + key + "\" is not a list of strings (item " +
                             std::to_string(i) + " is not a string)");
        out.emplace_back(str(v));
    }
    return out;
}

// The process's command line (hook.json's "argv" and "orig_argv"), from the
// object that holds them.
Result<void> parseCommandLine(const Value& object, const std::string& path, HookSidecar& s) {
    auto argv = stringList(object, "argv", path);
    if (!argv) return argv.error();
    auto orig_argv = stringList(object, "orig_argv", path);
    if (!orig_argv) return orig_argv.error();
    s.argv = std::move(*argv);
    s.orig_argv = std::move(*orig_argv);
    return {};
}

}  // namespace

std::optional<HookModuleScope> hookModuleScope(int64_t start_ns, int64_t end_ns, int64_t module,
                                               int64_t kind) {
    if (start_ns < 0 || end_ns < start_ns || module <= 0 || module > int64_t(UINT32_MAX) ||
        kind < 0 || kind >= kModuleScopeKindCount)
        return std::nullopt;
    return HookModuleScope{start_ns, end_ns, uint32_t(module), ModuleScopeKind(kind)};
}

std::optional<HookPhaseKind> hookPhaseKindFromString(std::string_view s) {
    for (HookPhaseKind k :
         {HookPhaseKind::Step, HookPhaseKind::Forward, HookPhaseKind::Backward,
          HookPhaseKind::Recompute, HookPhaseKind::Optimizer, HookPhaseKind::ZeroGrad})
        if (toString(k) == s) return k;
    return std::nullopt;
}

std::string_view toString(HookPhaseKind kind) {
    switch (kind) {
        case HookPhaseKind::Step:
            return "step";
        case HookPhaseKind::Forward:
            return "forward";
        case HookPhaseKind::Backward:
            return "backward";
        case HookPhaseKind::Recompute:
            return "recompute";
        case HookPhaseKind::Optimizer:
            return "optimizer";
        case HookPhaseKind::ZeroGrad:
            return "zero_grad";
    }
    return "step";
}

Result<HookSidecar> parseHookSidecar(std::string_view json, const std::string& path) {
    rapidjson::Document doc;
    doc.Parse(json.data(), json.size());
    if (doc.HasParseError())
        return makeError(path + ": not valid JSON at byte " + std::to_string(doc.GetErrorOffset()) +
                         " (" + rapidjson::GetParseError_En(doc.GetParseError()) + ")");
    if (!doc.IsObject() || text(doc, "format") != "memscope-hook")
        return makeError(path + ": not a memscope hook file (no \"format\": \"memscope-hook\")");
    const int64_t version = integer(doc, "version", 0);
    if (version != 1 && version != 2)
        return makeError(path + ": hook file version " + std::to_string(version) +
                         " is not supported (this memscope reads versions 1 and 2)");

    HookSidecar s;
    s.pid = integer(doc, "pid", -1);
    // A rank out of range is refused, never narrowed: 4294967301 is not rank 5.
    for (auto [key, field] : {std::pair{"rank", &s.rank}, std::pair{"local_rank", &s.local_rank}}) {
        const int64_t value = integer(doc, key, -1);
        if (value < -1 || value > INT32_MAX)
            return makeError(path + ": \"" + key + "\" " + std::to_string(value) +
                             " is not a rank (0 to " + std::to_string(INT32_MAX) + ")");
        *field = int32_t(value);
    }
    s.python = text(doc, "python");
    s.torch = text(doc, "torch");
    s.cwd = text(doc, "cwd");
    // A mistyped command line is not worth the recording: the run goes
    // unnamed by it, and the warning says why.
    if (auto command = parseCommandLine(doc, path, s); !command)
        s.warnings.push_back(command.message() + "; the run is not named after its command");
    s.started_ns = integer(doc, "started_ns", 0);
    s.ended_ns = integer(doc, "ended_ns", 0);
    s.complete = boolean(doc, "complete");
    s.exit = text(doc, "exit");
    if (auto it = doc.FindMember("hooks"); it != doc.MemberEnd() && it->value.IsObject())
        for (const auto& m : it->value.GetObject())
            s.hooks.emplace_back(std::string(str(m.name)), std::string(str(m.value)));

    size_t bad_phases = parsePhaseArray(array(doc, "phases"), s.phases);
    bad_phases += parsePhaseArray(array(doc, "open_phases"), s.open_phases);
    if (bad_phases > 0)
        s.warnings.push_back(std::to_string(bad_phases) +
                             " phases in the hook file were malformed and left out");
    if (version >= 2) {
        if (std::string log = text(doc, "log"); !log.empty()) s.log_file = std::move(log);
        if (auto captured = parseCapture(doc, s, path); !captured) return captured.error();
        parseModuleInfo(doc, s.module_info);
        parseApply(doc, s);
        if (const size_t bad =
                parseOpenModuleScopes(array(doc, "open_module_scopes"), s.open_module_scopes))
            s.warnings.push_back(std::to_string(bad) +
                                 " open module scopes in the hook file were malformed and left "
                                 "out");
    }

    if (const Value* histories = array(doc, "histories"))
        for (const Value& h : histories->GetArray())
            if (h.IsObject() && !text(h, "file").empty())
                s.histories.push_back({text(h, "file"), boolean(h, "cleared_before")});
    if (auto it = doc.FindMember("history"); it != doc.MemberEnd() && it->value.IsObject()) {
        s.history_enabled = boolean(it->value, "enabled");
        s.history_api = text(it->value, "api");
        s.history_reason = text(it->value, "reason");
        s.history_ring = boolean(it->value, "ring");
    }
    if (auto it = doc.FindMember("cpu_events"); it != doc.MemberEnd() && it->value.IsObject()) {
        if (std::string file = text(it->value, "file"); !file.empty())
            s.cpu_events_file = std::move(file);
    }
    if (const Value* sessions = array(doc, "profiler"))
        for (const Value& p : sessions->GetArray())
            if (p.IsObject())
                s.profiler_sessions.push_back({integer(p, "time_ns", 0), text(p, "what")});
    if (const Value* warnings = array(doc, "warnings"))
        for (const Value& w : warnings->GetArray())
            if (w.IsString()) s.warnings.emplace_back(str(w));

    // File names come from the process being traced: keep them inside the
    // hook folder.
    auto inside = [](const std::string& f) {
        return f.find('/') == std::string::npos && f != "." && f != "..";
    };
    for (const HookHistoryDump& h : s.histories)
        if (!inside(h.file))
            return makeError(path + ": history file name '" + h.file + "' is not a plain name");
    if (s.log_file && !inside(*s.log_file))
        return makeError(path + ": log file name '" + *s.log_file + "' is not a plain name");
    if (s.cpu_events_file && !inside(*s.cpu_events_file))
        return makeError(path + ": CPU events file name '" + *s.cpu_events_file +
                         "' is not a plain name");
    return s;
}

Result<HookSidecar> readHookSidecar(const std::string& path) {
    auto json = readWholeFile(path, kMaxSidecarBytes, "the hook file");
    if (!json) return json.error();
    return parseHookSidecar(*json, path);
}

}  // namespace memscope
