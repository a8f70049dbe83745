#include "memscope/inference/op_inference.h"

#include <algorithm>
#include <array>
#include <vector>

namespace memscope {
namespace {

constexpr std::string_view kOpsPrefix = "at::_ops::";

// PyTorch's lower-case overload names (native_functions.yaml), each the
// start of an overload ("dim" of "dim_IntList", "start" of "start_out").
constexpr std::array<std::string_view, 26> kLowerCaseOverloads = {
    "out",    "memory_format", "int",       "dim",        "dims",       "self",  "other",
    "input",  "using_ints",    "names",     "dimname",    "start",      "dtype", "device",
    "source", "correction",    "vec",       "p",          "float",      "low",   "src",
    "value",  "two",           "generator", "grad_input", "using_names"};

// Ops whose own name ends in what reads as an overload.
constexpr std::array<std::string_view, 5> kWholeNames = {"sparse_dim", "dense_dim",
                                                         "norm_except_dim", "_dimI", "_dimV"};

bool startsWithWord(std::string_view s, std::string_view word) {
    return s.size() >= word.size() && s.compare(0, word.size(), word) == 0 &&
           (s.size() == word.size() || s[word.size()] == '_');
}

// Whether `suffix` (what follows a '_') can be an overload name.
bool isOverload(std::string_view suffix) {
    if (suffix.empty()) return false;
    if (suffix.front() >= 'A' && suffix.front() <= 'Z') return true;
    return std::any_of(kLowerCaseOverloads.begin(), kLowerCaseOverloads.end(),
                       [&](std::string_view w) { return startsWithWord(suffix, w); });
}

bool isIdentifierChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string opNameOfIdentifier(std::string_view id) {
    const std::string_view whole = id;
    if (std::find(kWholeNames.begin(), kWholeNames.end(), id) != kWholeNames.end() ||
        id.substr(0, 6) == "_cast_")  // _cast_Float, _cast_Int: ops of their own
        return std::string(whole);
    // The first '_' after some of the name's own letters that starts an
    // overload: "add__Tensor" is add_ (in place) with overload Tensor.
    const size_t first_letter = id.find_first_not_of('_');
    if (first_letter == std::string_view::npos) return std::string(whole);
    for (size_t p = id.find('_', first_letter); p != std::string_view::npos;
         p = id.find('_', p + 1))
        if (isOverload(id.substr(p + 1))) return std::string(id.substr(0, p));
    return std::string(whole);
}

std::optional<std::string> opOfFrameFunction(std::string_view function) {
    while (!function.empty() && function.front() == ' ') function.remove_prefix(1);
    if (function.substr(0, kOpsPrefix.size()) != kOpsPrefix) return std::nullopt;
    function.remove_prefix(kOpsPrefix.size());
    size_t n = 0;
    while (n < function.size() && isIdentifierChar(function[n])) ++n;
    if (n == 0) return std::nullopt;
    const std::string_view id = function.substr(0, n);
    std::string_view rest = function.substr(n);
    bool entry = false;
    for (std::string_view method : {std::string_view("::call"), std::string_view("::redispatch")})
        if (rest.substr(0, method.size()) == method) {
            rest.remove_prefix(method.size());
            entry = rest.empty() || rest.front() == '(';
            break;
        }
    if (!entry) return std::nullopt;
    return "aten::" + opNameOfIdentifier(id);
}

namespace {

// Each frame's op (null for none) and whether it is an allocation helper.
struct FrameOps {
    std::vector<StringId> op;  // index = FrameId value; 0 unused
    std::vector<uint8_t> helper;
    bool any = false;
};

FrameOps frameOps(Trace& trace) {
    FrameOps out;
    const size_t n = trace.frames().size();
    out.op.assign(n + 1, StringId{});
    out.helper.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
        const auto name = opOfFrameFunction(trace.string(trace.frames()[i].function));
        if (!name) continue;
        out.op[i + 1] = trace.internString(*name);
        out.helper[i + 1] = isAllocationHelperOp(*name);
        out.any = true;
    }
    return out;
}

// The innermost op that is not a helper, else the outermost helper.
StringId opOfStack(const Trace& trace, StackId stack, const FrameOps& frames) {
    StringId helper;
    for (FrameId f : trace.stack(stack)) {
        if (f.value >= frames.op.size() || frames.op[f.value].isNull()) continue;
        if (!frames.helper[f.value]) return frames.op[f.value];
        helper = frames.op[f.value];
    }
    return helper;
}

}  // namespace

OpInferenceReport inferOps(Trace& trace, const TaskContext& ctx) {
    OpInferenceReport report;
    for (const Event& e : trace.events) report.allocations += e.kind == EventKind::Alloc;
    if (!trace.ops.empty() || trace.ops.source != OpSource::None) {
        report.source = trace.ops.source;
        if (trace.ops.source == OpSource::Inferred)
            for (StringId op : trace.ops.event_ops) report.allocations_with_op += !op.isNull();
        return report;
    }
    if (report.allocations == 0) return report;
    const FrameOps frames = frameOps(trace);
    if (!frames.any) return report;
    // By stack, found once: a snapshot's millions of allocations share a few
    // thousand stacks.
    constexpr uint32_t kUnknown = UINT32_MAX;
    std::vector<uint32_t> of_stack(trace.stackCount(), kUnknown);
    std::vector<StringId> event_ops(trace.events.size());
    for (size_t i = 0; i < trace.events.size(); ++i) {
        if ((i & 0xffff) == 0 && ctx.cancelled()) return report;
        const Event& e = trace.events[i];
        if (e.kind != EventKind::Alloc || e.stack.isNull() || e.stack.value >= of_stack.size())
            continue;
        uint32_t& op = of_stack[e.stack.value];
        if (op == kUnknown) op = opOfStack(trace, e.stack, frames).value;
        event_ops[i] = StringId{op};
        report.allocations_with_op += op != 0;
    }
    if (report.allocations_with_op == 0) return report;
    trace.ops.source = OpSource::Inferred;
    trace.ops.event_ops = std::move(event_ops);
    report.source = OpSource::Inferred;
    return report;
}

}  // namespace memscope
