#include "memscope/whatif/apply_plan.h"

#include "memscope/base/json_text.h"

namespace memscope {
namespace {

void appendField(std::string& out, std::string_view key, std::string_view value) {
    appendJsonString(out, key);
    out += ':';
    appendJsonString(out, value);
}

void appendModule(std::string& out, const std::string& root, const std::string& path,
                  const std::string& type) {
    appendField(out, "root", root);
    out += ',';
    appendField(out, "path", path);
    out += ',';
    appendField(out, "type", type);
}

}  // namespace

std::string applyPlanJson(const PolicyModules& m) {
    std::string out = "{";
    appendField(out, "format", kApplyPlanFormat);
    out += ',';
    appendField(out, "policy", m.policy);
    out += ",\"use_reentrant\":";
    out += m.reentrant ? "true" : "false";
    out += ",\"optimizer_in_backward\":";
    out += m.optimizer_in_backward ? "true" : "false";
    out += ",\"checkpoint\":[";
    for (size_t i = 0; i < m.modules.size(); ++i) {
        const CheckpointedModule& c = m.modules[i];
        out += i ? ",{" : "{";
        appendModule(out, c.root, c.path, c.type);
        out += ",\"save\":[";
        for (size_t k = 0; k < c.save_ops.size(); ++k) {
            if (k) out += ',';
            appendJsonString(out, c.save_ops[k]);
        }
        out += "]}";
    }
    out += "],\"sequential\":";
    if (m.sequential) {
        out += '{';
        appendModule(out, m.sequential->root, m.sequential->path, m.sequential->type);
        out += ",\"segments\":" + std::to_string(m.sequential->segments) + '}';
    } else {
        out += "null";
    }
    out += "}\n";
    return out;
}

}  // namespace memscope
