#include "options.h"

#include <cstdlib>
#include <string_view>

#include "memscope_cupti/record_env.h"

namespace memscope::cupti {
namespace {

bool isOff(std::string_view v) {
    return v.empty() || v == "0" || v == "false" || v == "no" || v == "off";
}

bool flag(EnvLookup lookup, const char* name) {
    const char* value = lookup(name);
    return value && !isOff(value);
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

const char* systemLookup(const char* name) {
    return std::getenv(name);
}

}  // namespace

bool expandableSegmentsEnabled(const char* alloc_conf) {
    if (!alloc_conf) return false;
    std::string_view rest = alloc_conf;
    bool enabled = false;  // the last setting wins, as in PyTorch's parser
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        const size_t colon = item.find(':');
        if (colon == std::string_view::npos) continue;
        if (trim(item.substr(0, colon)) != "expandable_segments") continue;
        // PyTorch accepts exactly "True" / "False"; be lenient about case.
        const std::string_view value = trim(item.substr(colon + 1));
        enabled = value == "True" || value == "true" || value == "1";
    }
    return enabled;
}

TracerOptions optionsFromEnvironment(EnvLookup lookup) {
    TracerOptions o;
    if (const char* dir = lookup(env::kOutputDir); dir && *dir) o.output_dir = dir;
    // --tensor-level sets PYTORCH_NO_CUDA_MEMORY_CACHING; a user who sets that
    // by hand gets tensor-level events too.
    o.tensor_level = flag(lookup, env::kTensorLevel) || flag(lookup, env::kNoCaching);
    o.stacks = flag(lookup, env::kStacks);
    // Expandable segments are cuMemMap'ed: without the VMM callbacks the
    // segments PyTorch reserves would be invisible. An explicit
    // MEMSCOPE_VMM_CALLBACKS (even "0") is the user's decision and wins.
    if (const char* vmm = lookup(env::kVmmCallbacks)) {
        o.vmm_callbacks = !isOff(vmm);
    } else if (expandableSegmentsEnabled(lookup(env::kAllocConf)) ||
               expandableSegmentsEnabled(lookup(env::kAllocConfNew))) {
        o.vmm_callbacks = true;
        o.vmm_for_expandable_segments = true;
    }
    return o;
}

TracerOptions optionsFromEnvironment() {
    return optionsFromEnvironment(systemLookup);
}

}  // namespace memscope::cupti
