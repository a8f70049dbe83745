#include "memscope/whatif/pytorch_code.h"

#include <algorithm>
#include <cstdio>

namespace memscope {
namespace {

// A Python string literal of `text`: printable ASCII as is, anything else
// (a hostile trace's path) escaped, so the code never runs what a trace says.
std::string pyString(std::string_view text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c >= 0x20 && c < 0x7f) {
            out += char(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return out + "\"";
}

// A comment line's text: one line, printable.
std::string commentText(std::string_view text) {
    std::string out;
    for (unsigned char c : text) out += c >= 0x20 && c != 0x7f ? char(c) : ' ';
    return out;
}

std::string pyList(const std::vector<std::string>& items, size_t indent) {
    std::string out = "[";
    size_t line = indent + 1;
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string item = pyString(items[i]) + (i + 1 < items.size() ? "," : "");
        if (i > 0 && line + item.size() + 1 > 96) {
            out += "\n" + std::string(indent + 4, ' ');
            line = indent + 4;
        } else if (i > 0) {
            out += ' ';
            ++line;
        }
        out += item;
        line += item.size();
    }
    return out + "]";
}

bool anySaveList(const PolicyModules& p) {
    return std::any_of(p.modules.begin(), p.modules.end(),
                       [](const CheckpointedModule& m) { return !m.save_ops.empty(); });
}

// The root the modules hang from, for the comment naming `model`.
std::string rootOf(const PolicyModules& p) {
    if (!p.modules.empty()) return p.modules.front().root;
    if (p.sequential) return p.sequential->root;
    return {};
}

}  // namespace

std::string pytorchCodeNeeds(const PolicyModules& p) {
    if (anySaveList(p)) return "2.4";
    if (p.optimizer_in_backward) return "2.1";
    return "1.11";
}

std::string pytorchCode(const PolicyModules& p, const PytorchCodeOptions& options) {
    std::string out = "# memscope: " + commentText(p.policy);
    if (!options.source.empty()) out += ", as predicted from " + commentText(options.source);
    out += "\n# Needs PyTorch >= " + pytorchCodeNeeds(p) +
           ". Run it once after the model is built, before training; `model` is your " +
           (rootOf(p).empty() ? std::string("model") : commentText(rootOf(p))) + " instance.\n";
    out += "import torch\n";
    const bool checkpoints = !p.modules.empty();
    if (checkpoints) {
        out += "import functools\nfrom torch.utils.checkpoint import checkpoint\n";
        if (anySaveList(p))
            out +=
                "from torch.utils.checkpoint import CheckpointPolicy, "
                "create_selective_checkpoint_contexts  # PyTorch >= 2.4\n";
        out +=
            "\n\ndef checkpoint_forward(module, **checkpoint_kwargs):\n"
            "    \"\"\"Runs module's forward under torch.utils.checkpoint while training.\"\"\"\n"
            "    forward = module.forward\n\n"
            "    @functools.wraps(forward)\n"
            "    def checkpointed(*args, **kwargs):\n"
            "        if module.training and torch.is_grad_enabled():\n"
            "            return checkpoint(forward, *args, use_reentrant=" +
            std::string(p.reentrant ? "True" : "False") +
            ", **checkpoint_kwargs, **kwargs)\n"
            "        return forward(*args, **kwargs)\n\n"
            "    module.forward = checkpointed\n";
    }
    // Save lists: the modules sharing one list share one policy function.
    std::vector<std::vector<std::string>> lists;
    for (const CheckpointedModule& m : p.modules)
        if (!m.save_ops.empty() && std::find(lists.begin(), lists.end(), m.save_ops) == lists.end())
            lists.push_back(m.save_ops);
    for (size_t i = 0; i < lists.size(); ++i) {
        const std::string n = lists.size() == 1 ? "" : std::to_string(i + 1);
        out +=
            "\n\n# The ops whose outputs are saved; everything else the layer runs is "
            "recomputed.\n";
        const std::string indent(12 + n.size(), ' ');
        out += "SAVE_OPS";
        out += n;
        out += " = {getattr(getattr(torch.ops, name.split(\"::\")[0]), name.split(\"::\")[1])\n";
        out += indent;
        out += "for name in ";
        out += pyList(lists[i], indent.size());
        out += "\n";
        out += indent;
        out += "if hasattr(getattr(torch.ops, name.split(\"::\")[0]), name.split(\"::\")[1])}\n";
        out += "\n\ndef save_list";
        out += n;
        out += "(ctx, op, *args, **kwargs):\n";
        out += "    return (CheckpointPolicy.MUST_SAVE if op.overloadpacket in SAVE_OPS";
        out += n;
        out += "\n            else CheckpointPolicy.PREFER_RECOMPUTE)\n";
    }
    auto paths = [&](bool saving, const std::vector<std::string>* list) {
        std::vector<std::string> out_paths;
        for (const CheckpointedModule& m : p.modules)
            if (saving ? (list && m.save_ops == *list) : m.save_ops.empty())
                out_paths.push_back(m.path);
        return out_paths;
    };
    if (checkpoints) out += "\n";
    const std::vector<std::string> whole = paths(false, nullptr);
    if (!whole.empty()) {
        out += "# Checkpointed whole: the forward runs again in backward.\n";
        out += "for path in " + pyList(whole, 0) + ":\n";
        out += "    checkpoint_forward(model.get_submodule(path))\n";
    }
    for (size_t i = 0; i < lists.size(); ++i) {
        const std::string n = lists.size() == 1 ? "" : std::to_string(i + 1);
        out += "# Checkpointed with the save list: only the other ops run again in backward.\n";
        out += "for path in " + pyList(paths(true, &lists[i]), 0) + ":\n";
        out +=
            "    checkpoint_forward(model.get_submodule(path), context_fn=functools.partial(\n"
            "        create_selective_checkpoint_contexts, save_list" +
            n + "))\n";
    }
    if (p.sequential) {
        out += "\nfrom torch.utils.checkpoint import checkpoint_sequential\n\n";
        out += "# checkpoint_sequential over the layers' nn.Sequential: " +
               std::to_string(p.sequential->segments) +
               " segments, all but the last recomputed in backward.\n";
        out += "body = model.get_submodule(" + pyString(p.sequential->path) + ")\n";
        out += "body_forward = body.forward\n\n\n";
        out +=
            "def body_checkpointed(x):\n"
            "    if body.training and torch.is_grad_enabled():\n"
            "        return checkpoint_sequential(body, " +
            std::to_string(p.sequential->segments) +
            ", x)\n"
            "    return body_forward(x)\n\n\n"
            "body.forward = body_checkpointed\n";
    }
    if (p.optimizer_in_backward) {
        out +=
            "\n# The optimizer step fused into backward (PyTorch >= 2.1; PyTorch's tutorial "
            "\"How to save memory by\n# fusing the optimizer step into the backward pass\"): "
            "use these instead of your optimizer, and\n# drop optimizer.step() and "
            "optimizer.zero_grad() from the loop. Not with gradient clipping or\n# "
            "gradient accumulation. Put your optimizer's class and settings here.\n";
        out +=
            "optimizer_dict = {p: torch.optim.AdamW([p], foreach=False) for p in "
            "model.parameters()}\n\n\n";
        out +=
            "def optimizer_hook(parameter):\n"
            "    optimizer_dict[parameter].step()\n"
            "    optimizer_dict[parameter].zero_grad()\n\n\n";
        out +=
            "for p in model.parameters():\n"
            "    p.register_post_accumulate_grad_hook(optimizer_hook)\n";
    }
    if (!checkpoints && !p.sequential && !p.optimizer_in_backward)
        out += "# Nothing to change: the policy keeps every activation.\n";
    return out;
}

}  // namespace memscope
