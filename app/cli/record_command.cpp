// memscope-cli record [-o DIR] [--no-python-hook] [--tensor-level] [--stacks] [--vmm]
//                     [--history-entries N] [--module-depth N] [--module-backward]
//                     [--no-tensor-roles] [--ops auto|dispatch|frames|off]
//                     [--apply POLICY [--from RUN]] -- CMD ARGS...
// memscope-cli record --merge DIR
// Two recorders are injected through the environment (record_env.h): the CUPTI
// tracer into every process that initializes CUDA, and the Python startup hook
// into every Python process. After the command ends, each process's parts are
// merged into one trace (core's recording_folder.h; record_outcome.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "live_snapshots.h"
#include "memscope/base/file_io.h"
#include "memscope/recording/hook_env.h"
#include "memscope/recording/recording_folder.h"
#include "memscope_cupti/record_env.h"
#include "process_watch.h"
#include "record_apply.h"
#include "record_child.h"
#include "record_exit.h"
#include "record_outcome.h"
#include "record_report.h"

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;
namespace env = memscope::cupti::env;

struct RecordOptions {
    fs::path dir = "memscope-traces";
    bool no_python_hook = false;
    bool tensor_level = false;
    bool stacks = false;
    bool vmm = false;
    uint64_t history_entries = 0;  // 0: the hook's default
    bool history_ring = false;
    std::string steps;                            // "A:B" (checked by parseStepRange)
    std::string capture_range;                    // "nvtx:NAME"
    int module_depth = env::kDefaultModuleDepth;  // module levels recorded; 0: none
    bool module_backward = false;
    bool no_tensor_roles = false;  // categories inferred, not recorded
    std::string ops;               // MEMSCOPE_OPS; "": the hook's default (auto)
    bool idle = false;             // attachable, recording nothing until `attach`
    bool live = false;             // snapshots of the recording so far, for --follow
    std::string apply;             // --apply POLICY: measured with the policy applied
    std::string from;              // --from RUN: the recording POLICY's layers refer to
    std::vector<std::string> command;
    std::string merge;  // --merge DIR: finish what a run left there, run nothing
    bool output_given = false;
};

// "" when `value` is valid for the hook's variable `name` (hook_env.h: the
// one validation the hook and the merge share), else what is wrong.
std::string hookValueProblem(const char* name, const std::string& value) {
    auto checked = checkHookVariable(name, value);
    if (checked) return {};
    // Without the "NAME=VALUE: " (CLI11 names the option).
    const std::string& m = checked.message();
    const size_t at = m.find(": ");
    return at == std::string::npos ? m : m.substr(at + 2);
}

// The hook's variables set in record's own environment (not by its options):
// checked as the hook and the merge check them, before anything runs.
Result<void> checkInheritedHookVariables() {
    for (const char* name : {env::kSteps, env::kHistoryEntries, env::kModuleDepth,
                             env::kCaptureRange, env::kTensorRoles, env::kOps}) {
        const char* value = std::getenv(name);
        if (!value || !*value) continue;
        if (auto checked = checkHookVariable(name, value); !checked)
            return makeError(checked.message() + " (set in the environment; unset it or fix it)");
    }
    return {};
}

fs::path thisProgramsFolder() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

// A file shipped with memscope: an explicit override, else where the build and
// the install put it relative to this executable. An override that names
// nothing usable is an error, not a quiet run without what it names.
Result<std::optional<fs::path>> findShipped(const char* override_variable,
                                            const std::vector<fs::path>& relative,
                                            std::vector<fs::path>& tried, bool directory) {
    auto usable = [directory](const fs::path& p) {
        std::error_code ec;
        return directory ? fs::is_directory(p, ec) : fs::is_regular_file(p, ec);
    };
    if (const char* path = std::getenv(override_variable); path && *path) {
        tried.emplace_back(path);
        std::error_code ec;
        if (usable(path)) return std::optional<fs::path>(fs::absolute(path, ec));
        const bool exists = fs::exists(path, ec);
        return makeError(std::string(override_variable) + "=" + path + ": " +
                         (!exists     ? "no such " + std::string(directory ? "folder" : "file")
                          : directory ? std::string("not a folder")
                                      : std::string("not a regular file")) +
                         " (unset it to use the one shipped with memscope-cli)");
    }
    const fs::path bin = thisProgramsFolder();
    if (bin.empty()) return std::optional<fs::path>();
    for (const fs::path& r : relative) {
        const fs::path candidate = (bin / r).lexically_normal();
        tried.push_back(candidate);
        if (usable(candidate)) return std::optional<fs::path>(candidate);
    }
    return std::optional<fs::path>();
}

std::vector<fs::path> libraryPlaces(const std::string& name) {
    std::vector<fs::path> places = {fs::path("../lib") / name, fs::path("../lib64") / name,
                                    fs::path(name)};
    // Debian-style installs put libraries one level down (lib/x86_64-linux-gnu).
    std::error_code ec;
    const fs::path lib = thisProgramsFolder() / ".." / "lib";
    for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec))
            places.push_back(fs::path("../lib") / it->path().filename() / name);
    return places;
}

void warnIfReplacing(const char* name, const std::string& ours) {
    const char* current = std::getenv(name);
    if (current && *current && ours != current)
        std::fprintf(stderr, "memscope-cli record: replacing %s=%s (another tool's injection)\n",
                     name, current);
}

// The recorders this run injects, and the environment that does it.
struct Injection {
    Environment set;
    bool cupti = false;
    bool python_hook = false;
    fs::path hook_folder;      // with python_hook
    bool cpu_capture = false;  // the CPU capture library was found
};

Result<Injection> plan(const RecordOptions& o, const fs::path& dir,
                       const std::optional<fs::path>& apply_plan) {
    Injection in;
    in.set.emplace_back(env::kOutputDir, dir.string());

    std::vector<fs::path> tried_cupti;
    // Idle: the tracer would record the whole run; windows come from the
    // allocator history, which the hook switches on and off.
    std::optional<fs::path> cupti;
    if (!o.idle) {
        const auto found_cupti = findShipped(
            env::kLibraryOverride, libraryPlaces("libmemscope_cupti.so"), tried_cupti, false);
        if (!found_cupti) return found_cupti.error();
        cupti = *found_cupti;
    }
    if (cupti) {
        in.cupti = true;
        in.set.emplace_back(env::kCudaInjection, cupti->string());
        in.set.emplace_back(env::kNvtxInjection, cupti->string());
        warnIfReplacing(env::kCudaInjection, cupti->string());
        warnIfReplacing(env::kNvtxInjection, cupti->string());
    }

    std::vector<fs::path> tried_hook;
    std::optional<fs::path> hook;
    if (!o.no_python_hook) {
        auto found = findShipped(env::kPyhookOverride,
                                 {"../share/memscope/pyhook", "../../share/memscope/pyhook"},
                                 tried_hook, true);
        if (!found) return found.error();
        hook = *found;
        if (hook && !fs::exists(*hook / "sitecustomize.py")) {
            // Named by the user: say so, rather than record without the hook.
            if (const char* named = std::getenv(env::kPyhookOverride); named && *named)
                return makeError(std::string(env::kPyhookOverride) + "=" + named +
                                 ": no sitecustomize.py there; not memscope's Python hook folder "
                                 "(unset it to use the one shipped with memscope-cli)");
            hook.reset();
        }
    }
    if (hook) {
        if (auto inherited = checkInheritedHookVariables(); !inherited) return inherited.error();
        // A plan named by the environment would change the job unasked.
        if (const char* inherited = std::getenv(env::kApply); inherited && *inherited)
            return makeError(std::string(env::kApply) + "=" + inherited +
                             " is set in the environment: it would apply a checkpointing policy "
                             "to the job; unset it (record --apply POLICY sets it)");
        if (apply_plan) in.set.emplace_back(env::kApply, apply_plan->string());
        in.python_hook = true;
        in.hook_folder = *hook;
        std::string path = hook->string();
        if (const char* previous = std::getenv(env::kPythonPath); previous && *previous)
            path += std::string(":") + previous;
        in.set.emplace_back(env::kPythonPath, path);
        in.set.emplace_back(env::kHook, "1");
        std::vector<fs::path> tried_capture;
        auto capture =
            findShipped(env::kCaptureLibrary, libraryPlaces("libmemscope_torch_capture.so"),
                        tried_capture, false);
        // A capture library named but missing is the hook's to report (it
        // warns, and records without CPU allocations).
        if (capture && *capture) {
            in.set.emplace_back(env::kCaptureLibrary, (*capture)->string());
            in.cpu_capture = true;
        }
        if (o.history_entries > 0)
            in.set.emplace_back(env::kHistoryEntries, std::to_string(o.history_entries));
        if (o.history_ring) in.set.emplace_back(env::kHistoryRing, "1");
        if (!o.steps.empty()) in.set.emplace_back(env::kSteps, o.steps);
        if (!o.capture_range.empty()) in.set.emplace_back(env::kCaptureRange, o.capture_range);
        in.set.emplace_back(env::kModuleDepth, std::to_string(o.module_depth));
        if (o.module_backward) in.set.emplace_back(env::kModuleBackward, "1");
        if (o.no_tensor_roles) in.set.emplace_back(env::kTensorRoles, "0");
        if (!o.ops.empty()) in.set.emplace_back(env::kOps, o.ops);
        if (o.idle) in.set.emplace_back(env::kIdle, "1");
        if (const fs::path self = thisProgramsFolder() / "memscope-cli"; fs::exists(self))
            in.set.emplace_back(env::kCli, self.string());
    } else if (apply_plan) {
        return makeError(
            "--apply needs the Python hook (it applies the policy inside the job); drop "
            "--no-python-hook");
    } else if (o.idle) {
        return makeError(
            "--idle needs the Python hook (it serves attach's control socket); drop "
            "--no-python-hook");
    } else if (!o.steps.empty() || !o.capture_range.empty()) {
        return makeError(
            "--steps and --capture-range need the Python hook (they count steps "
            "and switch PyTorch's allocator history); drop --no-python-hook");
    }

    if (!in.cupti && !in.python_hook) {
        std::string message =
            "neither recorder was found: the CUPTI tracer libmemscope_cupti.so (this build may "
            "have skipped it: no CUDA toolkit; or set MEMSCOPE_CUPTI_LIBRARY) nor the Python "
            "hook (share/memscope/pyhook; or set MEMSCOPE_PYHOOK_DIR). Looked at:";
        for (const fs::path& p : tried_cupti) message += "\n  " + p.string();
        for (const fs::path& p : tried_hook) message += "\n  " + p.string();
        return makeError(message);
    }
    if (!in.python_hook && !o.no_python_hook) {
        std::string message =
            "memscope-cli record: the Python hook was not found (share/memscope/pyhook; or set "
            "MEMSCOPE_PYHOOK_DIR): recording CUDA allocations only, without PyTorch's allocator "
            "history or phases. Looked at:";
        for (const fs::path& p : tried_hook) message += " " + p.string();
        std::fprintf(stderr, "%s\n", message.c_str());
    }
    if (!in.cupti && !o.idle)
        std::fprintf(stderr,
                     "memscope-cli record: the CUPTI tracer was not found (built without a CUDA "
                     "toolkit?): recording PyTorch's allocator history, CPU allocations and "
                     "phases only\n");
    if (o.tensor_level) {
        std::fprintf(stderr,
                     "memscope-cli record: warning: --tensor-level turns PyTorch's caching "
                     "allocator off (PYTORCH_NO_CUDA_MEMORY_CACHING=1): every tensor becomes a "
                     "cudaMalloc/cudaFree with a device synchronization per free, CUDA graphs "
                     "fail to capture, and reserved memory and fragmentation vanish. It is meant "
                     "for programs without PyTorch; PyTorch programs are recorded at tensor level "
                     "without it.\n");
        in.set.emplace_back(env::kNoCaching, "1");
        in.set.emplace_back(env::kTensorLevel, "1");
    }
    if (o.stacks) in.set.emplace_back(env::kStacks, "1");
    // The tracer turns its cuMem* callbacks on by itself for expandable
    // segments. With the Python hook the allocator history already has them
    // (segment_map/unmap), and the callbacks would take the process's one
    // CUPTI subscriber, which torch.profiler needs: off unless asked for.
    if (o.vmm)
        in.set.emplace_back(env::kVmmCallbacks, "1");
    else if (in.python_hook)
        in.set.emplace_back(env::kVmmCallbacks, "0");
    return in;
}

int run(const RecordOptions& o) {
    if (!o.merge.empty()) {
        if (!o.command.empty() || o.output_given) {
            std::fprintf(stderr,
                         "memscope-cli record: --merge DIR finishes the recording in DIR and runs "
                         "nothing: give it no command and no -o\n");
            return kMergeUsageError;
        }
        return mergeLeftParts(o.merge);
    }
    if (o.command.empty()) {
        std::fprintf(stderr,
                     "memscope-cli record: no command given (see memscope-cli record --help)\n");
        return kRecordNotRun;
    }
    if (!o.apply.empty() && (o.idle || o.module_depth == 0)) {
        std::fprintf(stderr,
                     "memscope-cli record: --apply finds the policy's modules through the "
                     "module hooks, which %s turns off\n",
                     o.idle ? "--idle" : "--module-depth 0");
        return kRecordNotRun;
    }
    if (!o.from.empty() && o.apply.empty()) {
        std::fprintf(stderr,
                     "memscope-cli record: --from RUN goes with --apply POLICY (the recording "
                     "the policy's layers refer to)\n");
        return kRecordNotRun;
    }
    if (o.live && (o.idle || o.no_python_hook)) {
        std::fprintf(stderr,
                     "memscope-cli record: --live shows what the Python hook records as it "
                     "goes; %s\n",
                     o.idle ? "--idle records nothing until attach (whose windows are merged "
                              "when they end)"
                            : "--no-python-hook leaves only the CUPTI tracer's trace, which "
                              "memscope --follow follows as it grows");
        return kRecordNotRun;
    }
    if (o.idle && (!o.steps.empty() || !o.capture_range.empty())) {
        std::fprintf(stderr,
                     "memscope-cli record: --idle records nothing until memscope-cli attach "
                     "opens a window; it takes no --steps or --capture-range (attach --steps N "
                     "chooses the steps)\n");
        return kRecordNotRun;
    }
    std::error_code ec;
    const bool created_dir = fs::create_directories(o.dir, ec);
    const std::string create_error = ec ? ec.message() : std::string();
    // Absolute, because the command may change directory before it records.
    const fs::path dir = fs::absolute(o.dir, ec).lexically_normal();
    if (!fs::is_directory(dir, ec)) {
        std::fprintf(stderr, "memscope-cli record: cannot create the output folder %s%s%s\n",
                     dir.c_str(), create_error.empty() ? "" : ": ", create_error.c_str());
        return kRecordNotRun;
    }
    // Refused before the job starts: a job that runs for hours and then
    // cannot leave its recording is worse than one that does not start.
    if (auto writable = checkFolderWritable(dir.string()); !writable) {
        std::fprintf(stderr, "memscope-cli record: %s; choose another with -o (nothing was run)\n",
                     writable.message().c_str());
        if (created_dir) fs::remove(dir, ec);
        return kRecordNotRun;
    }
    // The policy resolved and its plan written before anything runs: a bad
    // policy, an unknown layer or an unreadable RUN stops here.
    std::optional<fs::path> apply_plan;
    auto notRun = [&](const std::string& message) {
        std::fprintf(stderr, "memscope-cli record: %s\n", message.c_str());
        if (apply_plan) fs::remove(*apply_plan, ec);
        if (created_dir) fs::remove(dir, ec);
        return kRecordNotRun;
    };
    if (!o.apply.empty()) {
        if (o.no_python_hook)
            return notRun(
                "--apply needs the Python hook (it applies the policy inside the job); drop "
                "--no-python-hook");
        auto written = writeApplyPlan(o.apply, o.from, dir);
        if (!written) return notRun(written.message() + " (nothing was run)");
        apply_plan = *written;
    }
    const auto injection = plan(o, dir, apply_plan);
    if (!injection) return notRun(injection.message());
    // The hook's folder, made here (a real folder of this user's, 0700)
    // before any process can write there: one planted in a shared output
    // folder (a symlink to elsewhere, another user's) is refused up front.
    if (injection->python_hook)
        if (auto own = makeOwnFolder((dir / kHookFolderName).string()); !own) {
            std::fprintf(stderr, "memscope-cli record: %s; nothing was run\n",
                         own.message().c_str());
            if (created_dir) fs::remove(dir, ec);
            return kRecordNotRun;
        }

    RecordedRun recorded;
    recorded.dir = dir;
    recorded.created_dir = created_dir;
    recorded.command = o.command;
    recorded.hook_folder = injection->python_hook ? injection->hook_folder.string() : "";
    recorded.cpu_capture = injection->cpu_capture;
    recorded.apply_policy = o.apply;
    recorded.before = traceFilesIn(dir);
    recorded.started_wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
    ProcessWatch watch;
    LiveSnapshots live;
    const Result<int> exit_code = runRecordedCommand(o.command, injection->set, [&](pid_t pid) {
        watch.start(pid);
        if (o.live) live.start(dir, recorded.started_wall_ns);
    });
    recorded.processes = watch.stop();
    live.stop();  // before the final merge, which replaces the live files
    if (!exit_code) {
        std::fprintf(stderr, "memscope-cli record: %s\n", exit_code.message().c_str());
        return kRecordNotRun;
    }
    if (o.idle) return finishIdleRun(recorded, *exit_code);
    return finishRecordedRun(recorded, *exit_code);
}

}  // namespace

void splitRecordCommand(std::vector<std::string>& args, size_t first,
                        std::vector<std::string>& command) {
    for (size_t i = first; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") {
            command.assign(args.begin() + long(i) + 1, args.end());
            args.resize(i);
            return;
        }
        if (a == "-o" || a == "--output" || a == "--history-entries" || a == "--steps" ||
            a == "--capture-range" || a == "--merge" || a == "--module-depth" || a == "--ops" ||
            a == "--apply" || a == "--from") {
            ++i;  // its value
            continue;
        }
        if (!a.empty() && a[0] == '-') continue;  // one of record's options (CLI11 checks it)
        command.assign(args.begin() + long(i), args.end());
        args.resize(i);
        return;
    }
}

Command addRecord(CLI::App& parent) {
    auto o = std::make_shared<RecordOptions>();
    CLI::App* app =
        parent.add_subcommand("record", "record a training job's memory (PyTorch and CUDA)");
    CLI::Option* output =
        app->add_option("-o,--output", o->dir, "folder for the traces (default: memscope-traces)");
    app->add_option("--merge", o->merge,
                    "finish a recording whose merge failed (disk full): merge the parts left in "
                    "DIR, run nothing")
        ->type_name("DIR");
    app->add_flag("--no-python-hook", o->no_python_hook,
                  "CUPTI only: no allocator history, CPU allocations or automatic phases");
    app->add_option("--history-entries", o->history_entries,
                    "allocator history ring size (default 1000000; saved before it wraps)")
        ->check([](const std::string& v) { return hookValueProblem(env::kHistoryEntries, v); });
    app->add_option("--steps", o->steps,
                    "record only steps A to B (A:B, or A; counted from 0 as the hook counts them)")
        ->check([](const std::string& v) { return hookValueProblem(env::kSteps, v); });
    app->add_option("--capture-range", o->capture_range,
                    "record only inside the first NVTX range NAME (nvtx:NAME), as Nsight Systems")
        ->check([](const std::string& v) { return hookValueProblem(env::kCaptureRange, v); });
    app->add_flag("--history-ring", o->history_ring,
                  "keep only the last --history-entries allocator events (bounded size; no "
                  "saving before the ring wraps)");
    app->add_option("--module-depth", o->module_depth,
                    "record which module runs when, this many levels deep (the model is level "
                    "1; default " +
                        std::to_string(env::kDefaultModuleDepth) + "; 0: no module scopes)")
        ->check([](const std::string& v) { return hookValueProblem(env::kModuleDepth, v); });
    app->add_flag("--module-backward", o->module_backward,
                  "module scopes in backward too (PyTorch 2.0+ global backward hooks; in-place "
                  "ops on a module's output then fail)");
    app->add_flag("--no-tensor-roles", o->no_tensor_roles,
                  "do not record which tensors are parameters, gradients, optimizer state and "
                  "inputs (their categories are then inferred)");
    app->add_option("--ops", o->ops,
                    "which aten op made each allocation: auto (default: at::RecordFunction in "
                    "the capture library where it loads into the job's PyTorch, a C++ callback "
                    "per op, within 3% of off; else none), dispatch (a TorchDispatchMode for the "
                    "whole run, any PyTorch, a Python call per op: tens of % slower), frames "
                    "(CUDA tensors on PyTorch 2.1+: the allocator history records C++ frames, "
                    "stacks=\"all\", and each allocation's op is inferred from them; what that "
                    "costs is PyTorch's, not measured here), off (docs/PERFORMANCE.md)")
        ->type_name("MODE")
        ->check([](const std::string& v) { return hookValueProblem(env::kOps, v); });
    app->add_flag("--live", o->live,
                  "while the job runs, merge what it has recorded so far into "
                  "DIR/memscope-PID.live.memscope about once a second (less often as it "
                  "grows), for memscope --follow DIR; the final trace replaces it");
    app->add_flag("--idle", o->idle,
                  "load the hook but record nothing: `memscope-cli attach DIR` records windows "
                  "of the running job (--steps N, --seconds S), `memscope-cli top DIR` shows it "
                  "live");
    app->add_option("--apply", o->apply,
                    "measure a checkpointing policy without editing the script: the hook runs "
                    "the job with POLICY applied (whatif's names: layers:1-2, sequential:2, "
                    "save:matmul, opt-in-bwd, ...); the trace is named \"(applied: POLICY)\"")
        ->type_name("POLICY");
    app->add_option("--from", o->from,
                    "with --apply: the recording of this job (a trace or snapshot) that "
                    "POLICY's layers refer to; not needed for opt-in-bwd alone")
        ->type_name("RUN");
    app->add_flag("--tensor-level", o->tensor_level,
                  "programs without PyTorch: caching allocator off (changes the program)");
    app->add_flag("--stacks", o->stacks, "host stack at each cudaMalloc (CUPTI callbacks)");
    app->add_flag(
        "--vmm", o->vmm,
        "record cuMem* calls (by itself with expandable_segments:True and --no-python-hook)");
    app->footer(
        std::string(
            "Usage: memscope-cli record [OPTIONS] [--] CMD [ARGS...]\n"
            "       memscope-cli record --merge DIR\n\n"
            "Runs CMD with two recorders and writes one trace per process:\n"
            "DIR/memscope-PID[-rankR][-localL].memscope.\n\n"
            "What is recorded:\n"
            "  Python processes that import torch (a startup hook on PYTHONPATH; your own\n"
            "  sitecustomize still runs):\n"
            "    - every tensor allocation and free of the CUDA caching allocator, with Python\n"
            "      stacks (its history, caching left on), saved at exit, on SIGTERM/SIGINT and\n"
            "      before its ring buffer wraps;\n"
            "    - CPU tensors (c10's allocator reports), when PyTorch matches the one memscope\n"
            "      was built against;\n"
            "    - phases with no code change: step k / forward, backward, recompute, optimizer;\n"
            "    - which module runs when (h.3.attn.c_attn, as named_modules() names it; forward\n"
            "      and recompute), --module-depth levels deep;\n"
            "    - which aten op made each allocation (aten::addmm, aten::_softmax), --ops.\n"
            "  Every process that initializes CUDA (CUPTI): cudaMalloc/cudaFree (segments, and\n"
            "  memory allocated outside PyTorch) and NVTX ranges of the default domain as "
            "phases.\n\n"
            "Cost: the history costs about what torch.cuda.memory._record_memory_history costs;\n"
            "CUPTI's memory records are cheap. --tensor-level sets "
            "PYTORCH_NO_CUDA_MEMORY_CACHING=1:\n"
            "a cudaMalloc per tensor and a synchronization per free, no CUDA graphs: it changes "
            "the\n"
            "program, and is meant for programs without PyTorch. --stacks and --vmm subscribe to\n"
            "CUPTI callbacks, which torch.profiler cannot share. torch.profiler takes CUPTI over\n"
            "when it starts: memscope says so, and the allocator history stays complete.\n\n"
            "The recorders are looked up next to this program (../lib, ../share/memscope/pyhook)\n"
            "unless MEMSCOPE_CUPTI_LIBRARY, MEMSCOPE_PYHOOK_DIR or MEMSCOPE_TORCH_CAPTURE_LIBRARY\n"
            "name them.\n\n"
            "--apply POLICY [--from RUN]: the hook wraps the modules POLICY names (as resolved\n"
            "on RUN) in torch.utils.checkpoint (save lists: PyTorch 2.4's selective checkpoint,\n"
            "memscope's own rebuild of it before), runs sequential:K's container through\n"
            "checkpoint_sequential, and fuses the optimizer step into backward for opt-in-bwd.\n"
            "What cannot be applied exactly (a module missing, clip_grad_norm_ with opt-in-bwd,\n"
            "LBFGS) is refused: the job runs on as written and record says why.\n\n"
            "Exit codes: CMD's own. When CMD exits 0: ") +
        std::to_string(kRecordingFailed) +
        " if the recording could not be finished\n"
        "(its parts are kept: memscope-cli record --merge DIR finishes it), " +
        std::to_string(kApplyRefused) +
        " if --apply's policy\nwas refused, else 0 (also when nothing was recorded: record "
        "says why). " +
        std::to_string(kRecordNotRun) +
        ": CMD was not run (bad usage, an output folder that\n"
        "cannot be written, no recorder found).\n"
        "record --merge DIR: 0 when everything was merged, " +
        std::to_string(kRecordingFailed) + " when something could not be,\n" +
        std::to_string(kMergeUsageError) +
        " when DIR does not exist or holds nothing to merge.\n\n"
        "Example: memscope-cli record -o traces -- python3 train.py --epochs 1");
    return {app,
            [o, output] {
                o->output_given = output->count() > 0;
                return run(*o);
            },
            [o](std::vector<std::string> command) { o->command = std::move(command); }};
}

}  // namespace memscope::cli
