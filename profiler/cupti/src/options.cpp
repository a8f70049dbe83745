#include "options.h"

#include <cstdlib>
#include <string_view>

#include "memscope_cupti/record_env.h"

namespace memscope::cupti {
namespace {
bool flag(const char* name) {
    const char* value = std::getenv(name);
    if (!value) return false;
    const std::string_view v = value;
    return !(v.empty() || v == "0" || v == "false" || v == "no" || v == "off");
}
}  // namespace

TracerOptions optionsFromEnvironment() {
    TracerOptions o;
    if (const char* dir = std::getenv(env::kOutputDir); dir && *dir) o.output_dir = dir;
    // --tensor-level sets PYTORCH_NO_CUDA_MEMORY_CACHING; a user who sets that
    // by hand gets tensor-level events too.
    o.tensor_level = flag(env::kTensorLevel) || flag(env::kNoCaching);
    o.stacks = flag(env::kStacks);
    o.vmm_callbacks = flag(env::kVmmCallbacks);
    return o;
}

}  // namespace memscope::cupti
