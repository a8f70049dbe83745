#include "memscope/recording/hook_env.h"

#include <limits>

namespace memscope {
namespace {

// ASCII digits only, at most INT32_MAX.
std::optional<int32_t> number(std::string_view s) {
    if (s.empty() || s.size() > 10) return std::nullopt;
    int64_t n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    if (n > std::numeric_limits<int32_t>::max()) return std::nullopt;
    return int32_t(n);
}

}  // namespace

Result<std::pair<int32_t, int32_t>> parseHookSteps(std::string_view text) {
    const size_t colon = text.find(':');
    const std::optional<int32_t> a = number(text.substr(0, colon));
    const std::optional<int32_t> b =
        colon == std::string_view::npos ? a : number(text.substr(colon + 1));
    if (!a || !b)
        return makeError("expected FIRST:LAST step numbers (from 0 to 2147483647), e.g. 3:4");
    if (*b < *a) return makeError("the last step comes before the first");
    return std::pair{*a, *b};
}

Result<int32_t> parseHookHistoryEntries(std::string_view text) {
    const auto n = number(text);
    if (!n || *n == 0) return makeError("expected a number of entries from 1 to 2147483647");
    return *n;
}

Result<int32_t> parseHookModuleDepth(std::string_view text) {
    const auto n = number(text);
    if (!n || *n > kMaxHookModuleDepth)
        return makeError("expected a number of levels from 0 (off) to " +
                         std::to_string(kMaxHookModuleDepth));
    return *n;
}

Result<std::string> parseHookCaptureRange(std::string_view text) {
    if (!text.starts_with("nvtx:") || text.size() == 5)
        return makeError("expected nvtx:NAME (the NVTX range that switches recording on)");
    return std::string(text.substr(5));
}

Result<bool> parseHookTensorRoles(std::string_view text) {
    if (text == "0") return false;
    if (text == "1") return true;
    return makeError("expected 0 or 1");
}

Result<std::string> parseHookApply(std::string_view text) {
    if (!text.starts_with('/') || text == "/" || text.size() > kMaxHookApplyPathBytes ||
        text.find('\0') != std::string_view::npos)
        return makeError("expected the absolute path of an apply plan (record --apply writes it)");
    return std::string(text);
}

std::string_view toString(HookOpsMode mode) {
    switch (mode) {
        case HookOpsMode::Auto:
            return "auto";
        case HookOpsMode::Dispatch:
            return "dispatch";
        case HookOpsMode::Off:
            return "off";
        case HookOpsMode::Frames:
            return "frames";
    }
    return "auto";
}

Result<HookOpsMode> parseHookOps(std::string_view text) {
    for (HookOpsMode m :
         {HookOpsMode::Auto, HookOpsMode::Dispatch, HookOpsMode::Off, HookOpsMode::Frames})
        if (text == toString(m)) return m;
    return makeError("expected auto, dispatch, frames or off");
}

Result<std::string> checkHookVariable(std::string_view name, std::string_view value) {
    const std::string where = std::string(name) + "=" + std::string(value) + ": ";
    auto failed = [&](const Error& e) { return makeError(where + e.message); };
    if (name == "MEMSCOPE_STEPS") {
        auto r = parseHookSteps(value);
        if (!r) return failed(r.error());
        return std::to_string(r->first) + ":" + std::to_string(r->second);
    }
    if (name == "MEMSCOPE_HISTORY_MAX_ENTRIES") {
        auto r = parseHookHistoryEntries(value);
        if (!r) return failed(r.error());
        return std::to_string(*r);
    }
    if (name == "MEMSCOPE_MODULE_DEPTH") {
        auto r = parseHookModuleDepth(value);
        if (!r) return failed(r.error());
        return std::to_string(*r);
    }
    if (name == "MEMSCOPE_CAPTURE_RANGE") {
        auto r = parseHookCaptureRange(value);
        if (!r) return failed(r.error());
        return "nvtx:" + *r;
    }
    if (name == "MEMSCOPE_TENSOR_ROLES") {
        auto r = parseHookTensorRoles(value);
        if (!r) return failed(r.error());
        return std::string(*r ? "1" : "0");
    }
    if (name == "MEMSCOPE_OPS") {
        auto r = parseHookOps(value);
        if (!r) return failed(r.error());
        return std::string(toString(*r));
    }
    if (name == "MEMSCOPE_APPLY") {
        auto r = parseHookApply(value);
        if (!r) return failed(r.error());
        return *r;
    }
    return makeError(where + "not a variable the hook validates");
}

}  // namespace memscope
