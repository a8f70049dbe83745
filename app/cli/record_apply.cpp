#include "record_apply.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cli_common.h"
#include "memscope/base/file_io.h"
#include "memscope/base/text_escape.h"
#include "memscope/recording/hook_sidecar.h"
#include "memscope/recording/recording_folder.h"
#include "memscope/whatif/apply_plan.h"
#include "memscope/whatif/policy_modules.h"
#include "memscope/whatif/whatif.h"

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;

// Whether the policy checkpoints nothing: it needs no modules, hence no RUN.
bool checkpointsNothing(const WhatIfPolicy& p) {
    return p.plan == RegionPlan::Chain && p.policy.recompute == Recompute::None;
}

Result<PolicyModules> resolve(const WhatIfPolicy& policy, const std::string& text,
                              const std::string& from) {
    if (checkpointsNothing(policy)) {
        if (!policy.policy.optimizer_in_backward)
            return makeError("--apply " + text +
                             ": the policy saves every activation and keeps the optimizer step "
                             "where it is, which is what the job does already; nothing to apply");
        PolicyModules m;
        m.policy = policy.name;
        m.optimizer_in_backward = true;
        return m;
    }
    if (from.empty())
        return makeError("--apply " + text +
                         ": the policy names layers or modules, so it needs --from RUN, the "
                         "recording of this job they refer to (e.g. a plain `memscope-cli "
                         "record` of it)");
    auto opened = openWithProgress(from);
    if (!opened) return makeError("--from " + from + ": " + opened.message());
    if (opened->parts.size() != 1 || !opened->parts.front().trace)
        return makeError("--from " + from + " holds " + std::to_string(opened->parts.size()) +
                         " traces; give one process's trace");
    auto resolved = policyModules(policy, *opened->parts.front().trace, CheckpointStyle::Auto);
    if (!resolved)
        return makeError("--apply " + text + " --from " + from + ": " + resolved.message());
    return resolved;
}

}  // namespace

Result<fs::path> writeApplyPlan(const std::string& text, const std::string& from,
                                const fs::path& dir) {
    auto policy = parseWhatIfPolicy(text);
    if (!policy) return makeError("--apply " + text + ": " + policy.message());
    auto modules = resolve(*policy, text, from);
    if (!modules) return modules.error();
    const std::string json = applyPlanJson(*modules);
    const fs::path path = dir / kApplyPlanFileName;
    auto written =
        writeFileReplacing(path.string(), [&json](const std::string& tmp) -> Result<void> {
            std::FILE* f = std::fopen(tmp.c_str(), "wb");
            if (!f) return makeError("cannot write " + tmp);
            const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
            if (std::fclose(f) != 0 || !ok) return makeError("cannot write " + tmp);
            return {};
        });
    if (!written) return makeError("writing the apply plan: " + written.message());
    return path;
}

namespace {

struct ProcessApply {
    int64_t pid = -1;
    HookApply apply;
};

std::vector<ProcessApply> readApplies(const fs::path& dir) {
    std::vector<ProcessApply> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir / kHookFolderName, ec), end; !ec && it != end;
         it.increment(ec)) {
        const fs::path file = it->path() / "hook.json";
        if (!fs::is_regular_file(fs::symlink_status(file, ec))) continue;
        auto sidecar = readHookSidecar(file.string());
        if (!sidecar || !sidecar->apply) continue;
        out.push_back({sidecar->pid, std::move(*sidecar->apply)});
    }
    std::sort(out.begin(), out.end(),
              [](const ProcessApply& a, const ProcessApply& b) { return a.pid < b.pid; });
    return out;
}

std::string howApplied(const HookApply& a) {
    std::string how;
    auto add = [&how](const std::string& part) { how += (how.empty() ? "" : "; ") + part; };
    if (!a.checkpointed.empty()) {
        std::string list;
        for (const std::string& c : a.checkpointed) list += (list.empty() ? "" : ", ") + c;
        add("checkpointed " + list);
    }
    if (!a.sequential.empty()) add("checkpoint_sequential over " + a.sequential);
    if (!a.save_lists.empty()) add("save lists by " + a.save_lists);
    if (!a.optimizer_in_backward.empty())
        add("optimizer step in backward by " + a.optimizer_in_backward);
    return how;
}

}  // namespace

bool reportApplied(const fs::path& dir, const std::string& policy) {
    const std::vector<ProcessApply> applies = readApplies(dir);
    bool applied = false;
    bool refused = false;
    for (const ProcessApply& p : applies) {
        if (!p.apply.refused.empty()) {
            refused = true;
            std::fprintf(stderr,
                         "memscope-cli record: --apply %s refused in process %lld: %s; its trace "
                         "is the job as written\n",
                         terminalText(policy).c_str(), static_cast<long long>(p.pid),
                         terminalText(p.apply.refused).c_str());
        } else if (p.apply.applied) {
            applied = true;
            std::printf("memscope: --apply %s applied in process %lld: %s\n",
                        terminalText(policy).c_str(), static_cast<long long>(p.pid),
                        terminalText(howApplied(p.apply)).c_str());
        }
    }
    if (!applied && !refused) {
        std::string why;
        for (const ProcessApply& p : applies)
            if (!p.apply.unused.empty())
                why += "\n  process " + std::to_string(p.pid) + ": " + p.apply.unused;
        std::fprintf(stderr,
                     "memscope-cli record: --apply %s was not applied: no process of the job "
                     "used it%s\n",
                     terminalText(policy).c_str(),
                     why.empty() ? " (none imported torch with memscope's hook)"
                                 : terminalText(why).c_str());
    }
    std::fflush(stdout);
    return applied && !refused;
}

}  // namespace memscope::cli
