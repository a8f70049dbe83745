// memscope-cli record [-o DIR] [--tensor-level] [--stacks] [--vmm] -- CMD ARGS...
// The CUPTI tracer is injected through the environment; see record_env.h.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "memscope_cupti/record_env.h"
#include "record_child.h"
#include "record_report.h"

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;
namespace env = memscope::cupti::env;

struct RecordOptions {
    fs::path dir = "memscope-traces";
    bool tensor_level = false;
    bool stacks = false;
    bool vmm = false;
    std::vector<std::string> command;
};

// The injection library: an explicit override, else where the build and the
// install put it relative to this executable.
std::optional<fs::path> findLibrary(std::vector<fs::path>& tried) {
    if (const char* override_path = std::getenv(env::kLibraryOverride);
        override_path && *override_path) {
        tried.emplace_back(override_path);
        std::error_code ec;
        if (fs::is_regular_file(override_path, ec)) return fs::absolute(override_path, ec);
        return std::nullopt;
    }
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return std::nullopt;
    const fs::path bin = exe.parent_path();
    const fs::path lib = (bin / ".." / "lib").lexically_normal();
    for (const fs::path& dir : {lib, (bin / ".." / "lib64").lexically_normal(), bin}) {
        const fs::path candidate = dir / "libmemscope_cupti.so";
        tried.push_back(candidate);
        if (fs::is_regular_file(candidate, ec)) return candidate;
    }
    // Debian-style installs put libraries one level down (lib/x86_64-linux-gnu).
    tried.push_back(lib / "*" / "libmemscope_cupti.so");
    for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path candidate = it->path() / "libmemscope_cupti.so";
        std::error_code ignored;
        if (fs::is_regular_file(candidate, ignored)) return candidate;
    }
    return std::nullopt;
}

void warnIfReplacing(const char* name, const std::string& ours) {
    const char* current = std::getenv(name);
    if (current && *current && ours != current)
        std::fprintf(stderr, "memscope-cli record: replacing %s=%s (another tool's injection)\n",
                     name, current);
}

int run(const RecordOptions& o) {
    if (o.command.empty()) {
        std::fprintf(stderr,
                     "memscope-cli record: no command given (see memscope-cli record --help)\n");
        return 1;
    }

    std::vector<fs::path> tried;
    const auto library = findLibrary(tried);
    if (!library) {
        std::fprintf(stderr,
                     "memscope-cli record: the CUPTI tracer libmemscope_cupti.so was not found; "
                     "looked at:\n");
        for (const fs::path& p : tried) std::fprintf(stderr, "  %s\n", p.c_str());
        std::fprintf(
            stderr,
            "(this build may have skipped it: no CUDA toolkit; or set MEMSCOPE_CUPTI_LIBRARY)\n");
        return 1;
    }
    std::error_code ec;
    const bool created_dir = fs::create_directories(o.dir, ec);
    // Absolute, because the command may change directory before CUDA starts.
    const fs::path dir = fs::absolute(o.dir, ec).lexically_normal();
    if (!fs::is_directory(dir, ec)) {
        std::fprintf(stderr, "memscope-cli record: cannot create the output directory %s\n",
                     dir.c_str());
        return 1;
    }

    Environment set = {
        {env::kCudaInjection, library->string()},
        {env::kNvtxInjection, library->string()},
        {env::kOutputDir, dir.string()},
    };
    if (o.tensor_level) {
        set.emplace_back(env::kNoCaching, "1");
        set.emplace_back(env::kTensorLevel, "1");
    }
    if (o.stacks) set.emplace_back(env::kStacks, "1");
    if (o.vmm) set.emplace_back(env::kVmmCallbacks, "1");
    warnIfReplacing(env::kCudaInjection, library->string());
    warnIfReplacing(env::kNvtxInjection, library->string());

    const DirectoryState before = traceFilesIn(dir);
    const Result<int> exit_code = runRecordedCommand(o.command, set);
    if (!exit_code) {
        std::fprintf(stderr, "memscope-cli record: %s\n", exit_code.message().c_str());
        return 1;
    }
    std::fflush(stdout);

    const auto files = newTraceFiles(dir, before);
    if (files.empty()) {
        // Leave no empty folder behind for a run that recorded nothing.
        if (created_dir) fs::remove(dir, ec);  // only removes it if empty
        std::fprintf(
            stderr,
            "memscope-cli record: no CUDA activity was recorded: no process of the "
            "command initialized "
            "CUDA or used NVTX (no GPU or driver on this machine?); no trace written to %s\n",
            dir.c_str());
        return *exit_code;
    }
    std::printf("memscope: %zu trace%s in %s\n", files.size(), files.size() == 1 ? "" : "s",
                dir.c_str());
    for (const fs::path& f : files) printRecordedTrace(f);
    std::printf("open them with: memscope %s   or: memscope-cli summary %s/*.memscope\n",
                dir.c_str(), dir.c_str());
    return *exit_code;
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
        if (a == "-o" || a == "--output") {
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
    CLI::App* app = parent.add_subcommand("record", "trace a CUDA program (CUPTI)");
    app->add_option("-o,--output", o->dir, "folder for the traces (default: memscope-traces)");
    app->add_flag("--tensor-level", o->tensor_level,
                  "every tensor: caching allocator off (slower, see below)");
    app->add_flag("--stacks", o->stacks, "host stack at each allocation (CUPTI callbacks)");
    app->add_flag("--vmm", o->vmm, "record cuMem* calls (expandable segments)");
    app->footer(
        "Runs CMD with the memscope CUPTI tracer injected into every process that initializes\n"
        "CUDA (torchrun ranks included), then prints where the traces are and a summary of each.\n"
        "CMD's own exit code is returned."
        "\n\n"
        "Usage: memscope-cli record [OPTIONS] [--] CMD [ARGS...]\n\n"
        "One trace per process: DIR/memscope-PID[-rankR][-localL].memscope.\n"
        "--tensor-level sets PYTORCH_NO_CUDA_MEMORY_CACHING=1, so that CUDA sees, and the trace\n"
        "records, every tensor: slower, and it changes the program (no caching, no CUDA graphs);\n"
        "without it the trace holds the segments the caching allocator reserves.\n"
        "--stacks and --vmm subscribe to CUPTI callbacks: torch.profiler cannot run beside "
        "them.\n\n"
        "NVTX ranges (torch.cuda.nvtx.range_push/pop) become phases. The library is looked up "
        "next\n"
        "to this program (../lib/libmemscope_cupti.so) unless MEMSCOPE_CUPTI_LIBRARY names it.\n\n"
        "Example: memscope-cli record -o traces -- python3 train.py --epochs 1");
    return {app, [o] { return run(*o); },
            [o](std::vector<std::string> command) { o->command = std::move(command); }};
}

}  // namespace memscope::cli
