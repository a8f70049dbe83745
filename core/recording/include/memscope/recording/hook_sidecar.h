#pragma once
// What memscope's Python startup hook (profiler/pyhook) leaves beside a
// recording, per process: `.memscope-hook/<pid>/hook.json` with the training
// phases it saw, the allocator-history dumps it wrote and what it could not
// do. Schema: docs/HOOK_FORMAT.md. Read by the recording merge.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/module_scopes.h"
#include "memscope/model/types.h"
#include "memscope/recording/capture_log.h"

namespace memscope {

enum class HookPhaseKind : uint8_t { Step, Forward, Backward, Recompute, Optimizer, ZeroGrad };

struct HookPhase {
    HookPhaseKind kind = HookPhaseKind::Step;
    int32_t step = -1;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
};

// Module scopes (log.jsonl's "module" and "module_scopes" records).
struct HookModule {
    uint32_t id = 0;   // the hook's number for it, from 1
    std::string root;  // the root module's label ("GPT", "Discriminator#2")
    std::string path;  // dotted under the root, as named_modules() names it; "" = the root
    std::string type;  // class name
};

struct HookModuleScope {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    uint32_t module = 0;  // a HookModule::id
    ModuleScopeKind kind = ModuleScopeKind::Forward;
};

// A scope from the hook's numbers; none when they cannot be one (negative
// or reversed times, no module, an unknown kind).
std::optional<HookModuleScope> hookModuleScope(int64_t start_ns, int64_t end_ns, int64_t module,
                                               int64_t kind);

// What the hook knew a tensor to be (log.jsonl's "tensor_roles" records;
// tensor_roles.h labels the allocations with them).
struct HookTensorRole {
    int64_t time_ns = 0;   // when the hook saw the tensor
    uint64_t address = 0;  // its storage's data_ptr()
    uint64_t bytes = 0;    // its storage's nbytes()
    int16_t device = -1;   // -1: host; else the CUDA ordinal
    Category role = Category::Unknown;
};

// The hook's role names: "parameter", "gradient", "optimizer_state", "input"
// (core's category names); none for any other.
std::optional<Category> tensorRoleFromString(std::string_view name);

// hook.json's "modules": how the module scopes were recorded.
struct HookModuleInfo {
    int32_t depth = -1;            // module levels recorded (0: none); -1: not said (older hook)
    std::string compile;           // non-empty: torch.compile was used (scopes may be missing)
    uint64_t dropped_modules = 0;  // modules past the hook's bound, not recorded
    uint64_t dropped_roots = 0;    // roots past the hook's bound, not recorded
};

// hook.json's "apply": what became of a policy record --apply asked for
// (the hook's apply.py). Applied and refused exclude each other; neither
// (a process that never ran the model, e.g. a launcher) says nothing.
struct HookApply {
    std::string policy;    // as record named it in the plan
    bool applied = false;  // every part of the plan was put in place
    std::string refused;   // why it was not ("": not refused)
    // Neither applied nor refused: what the process never did (ran no
    // training forward of the plan's model, built no optimizer), e.g. a
    // launcher's; record looks for another process that applied it.
    std::string unused;
    std::string save_lists;  // "selective-checkpoint-api" | "memscope-dispatch-cache" | ""
    std::string optimizer_in_backward;      // how the step was fused ("": not asked for)
    std::vector<std::string> checkpointed;  // "ROOT:PATH" of each module wrapped
    std::string sequential;                 // "ROOT:PATH" of the container, "" when none
};

struct HookHistoryDump {
    std::string file;             // relative to the hook folder
    bool cleared_before = false;  // the history was cleared after the previous dump
};

struct HookProfilerSession {
    int64_t time_ns = 0;
    std::string what;
};

struct HookSidecar {
    int64_t pid = -1;
    int32_t rank = -1;
    int32_t local_rank = -1;
    std::string python;
    std::string torch;
    // The process's command line: sys.argv as the script sees it ([script,
    // args...]) and sys.orig_argv, the interpreter's own ([python, options...,
    // script, args...]; sys.argv again before Python 3.10). Empty when the
    // hook did not write them.
    std::vector<std::string> argv;
    std::vector<std::string> orig_argv;
    std::string cwd;  // the working directory; "" when not written
    int64_t started_ns = 0;
    int64_t ended_ns = 0;
    bool complete = false;
    std::string exit;  // "atexit", "SIGTERM", "SIGINT", "running"
    std::vector<std::pair<std::string, std::string>> hooks;  // phase -> how it was hooked
    std::vector<HookPhase> phases;  // version 1 inline; version 2: resolved from the log
    // Version 2: the append-only log (hook_log.h) and the phases still open
    // when the final hook.json was written, closed then.
    std::optional<std::string> log_file;
    std::vector<HookPhase> open_phases;
    // The part of the run the allocator history was on for (record --steps /
    // --capture-range); none: the whole run.
    std::optional<std::pair<int32_t, int32_t>> capture_steps;
    std::optional<std::string> capture_nvtx;
    bool history_ring = false;  // only the last max_entries entries were kept
    std::vector<HookHistoryDump> histories;
    bool history_enabled = false;
    std::string history_api;
    std::string history_reason;
    std::optional<std::string> cpu_events_file;
    std::vector<HookProfilerSession> profiler_sessions;
    std::vector<std::string> warnings;
    // Module scopes: the modules and scopes of the log (resolved with the
    // phases), and the scopes still open when the final hook.json was
    // written, closed then.
    std::vector<HookModule> modules;
    std::vector<HookModuleScope> module_scopes;
    std::vector<HookModuleScope> open_module_scopes;
    HookModuleInfo module_info;
    // Tensor roles from the log, in the log's order.
    std::vector<HookTensorRole> tensor_roles;
    std::optional<HookApply> apply;  // record --apply
    // Op scopes from the log (MEMSCOPE_OPS=dispatch).
    CapturedOps ops;

    bool recordedAnything() const {
        return !phases.empty() || log_file.has_value() || !open_phases.empty() ||
               !histories.empty() || cpu_events_file.has_value();
    }
};

std::string_view toString(HookPhaseKind kind);  // "step", "forward", ... "zero_grad"
std::optional<HookPhaseKind> hookPhaseKindFromString(std::string_view s);  // none if unknown

// Parses hook.json; errors name the path and what is wrong. Unknown fields
// are ignored (a newer hook may add some); a newer major version is refused.
Result<HookSidecar> parseHookSidecar(std::string_view json, const std::string& path);
Result<HookSidecar> readHookSidecar(const std::string& path);

}  // namespace memscope
