#include "module_levels.h"

#include <algorithm>
#include <string_view>

#include "text_match.h"

namespace memscope::detail {
namespace {

bool isPythonFile(std::string_view file) {
    // "<eval_with_key>.3" (an fx GraphModule's forward), "<string>": Python too.
    return endsWith(file, ".py") || endsWith(file, ".pyx") || startsWith(file, "<");
}

bool isWrapper(std::string_view fn, std::string_view file) {
    return endsWith(file, "torch/nn/modules/module.py") &&
           (fn == "_call_impl" || fn == "_wrapped_call_impl" || fn == "__call__");
}

// checkpoint.py's functions that run the checkpointed function again inside
// backward: the reentrant backward, 1.13's unpack, 2.x's unpack_hook and
// recompute_fn.
bool isRerun(std::string_view fn) {
    return fn == "backward" || fn == "unpack" || fn == "unpack_hook" || fn == "recompute_fn";
}

}  // namespace

ModuleLevels::FrameKind ModuleLevels::kindOf(FrameId id) {
    if (id.isNull() || id.value > trace_.frames().size()) return Native;
    if (kinds_.size() <= id.value) kinds_.resize(trace_.frames().size() + 1, Unknown);
    if (kinds_[id.value] != Unknown) return FrameKind(kinds_[id.value]);
    const Frame& f = trace_.frame(id);
    const std::string_view fn = trace_.string(f.function);
    const std::string_view file = trace_.string(f.file);
    FrameKind kind = Native;
    if (!isPythonFile(file))
        kind = Native;
    else if (isWrapper(fn, file))
        kind = Wrapper;
    else if (endsWith(file, "torch/utils/checkpoint.py"))
        kind = isRerun(fn) ? CheckpointRerun : CheckpointCall;
    else
        kind = Python;
    kinds_[id.value] = kind;
    return kind;
}

uint32_t ModuleLevels::node(uint32_t parent, uint32_t call_site, const Frame& callee) {
    const Key key{parent, call_site, callee.function.value, callee.file.value};
    if (auto it = ids_.find(key); it != ids_.end()) return it->second;
    if (nodes_.size() >= kMaxLevelNodes) {
        capped_ = true;
        return kNoLevel;
    }
    const auto id = uint32_t(nodes_.size());
    nodes_.push_back({parent, call_site, callee.function, callee.file, UINT32_MAX});
    ids_.emplace(key, id);
    return id;
}

const StackLevels& ModuleLevels::of(StackId stack) {
    auto [it, fresh] = memo_.try_emplace(stack.value);
    if (fresh) read(stack, it->second);
    return it->second;
}

void ModuleLevels::read(StackId stack, StackLevels& out) {
    if (stack.isNull() || stack.value >= trace_.stackCount()) return;
    const std::span<const FrameId> frames = trace_.stack(stack);  // innermost first
    uint32_t caller = 0;  // the nearest Python frame outside, as a call site
    uint32_t parent = kNoLevel;
    bool in_wrapper = false, full = false;
    for (size_t i = frames.size(); i-- > 0;) {
        const FrameId id = frames[i];
        const FrameKind kind = kindOf(id);
        if (kind == Native) continue;
        out.python = true;
        switch (kind) {
            case Wrapper:
                in_wrapper = true;
                continue;
            case CheckpointRerun:
                // A recompute: the levels outside it are backward's caller
                // (the training loop), not the modules the recompute runs in.
                out.recompute = true;
                out.levels.clear();
                parent = kNoLevel;
                full = false;
                in_wrapper = false;
                caller = kCheckpointSite;
                continue;
            case CheckpointCall:
                in_wrapper = false;
                caller = kCheckpointSite;
                continue;
            default:
                break;
        }
        if (in_wrapper && !full) {
            const Frame& f = trace_.frame(id);
            const Key site{0, caller, f.function.value, f.file.value};
            uint32_t n = kNoLevel;
            if (out.recompute && parent == kNoLevel) {
                // The recompute's outermost call: the forward's node of the
                // same callee called from the same site (the checkpoint).
                if (auto c = by_site_.find(site); c != by_site_.end()) n = c->second;
            }
            if (n == kNoLevel) n = node(parent, caller, f);
            if (n == kNoLevel) {
                full = true;  // the node cap: deeper calls stay in this level's parent
            } else {
                if (!out.recompute && parent != kNoLevel) by_site_.try_emplace(site, n);
                out.levels.push_back({n, f.line});
                nodes_[n].min_line = std::min(nodes_[n].min_line, f.line);
                parent = n;
                full = out.levels.size() >= kMaxModuleLevels;
            }
        }
        in_wrapper = false;
        caller = id.value;
    }
}

}  // namespace memscope::detail
