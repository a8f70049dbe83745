#include "trace_file.h"

#include <cupti.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

#include "clock.h"
#include "memscope/base/json_text.h"
#include "memscope/model/run_name.h"
#include "memscope_cupti/record_env.h"

namespace memscope::cupti {
namespace {

std::optional<int32_t> intFromEnv(const char* name) {
    const char* value = std::getenv(name);
    if (!value || !*value) return std::nullopt;
    const std::string_view v = value;
    int32_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0) return std::nullopt;
    return n;
}

// The process's arguments, read once when the trace starts. Bounded: a
// command line is at most ARG_MAX, but the trace keeps what names the run.
std::vector<std::string> commandArguments() {
    constexpr size_t kMaxBytes = 64 * 1024;
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string raw;
    char buffer[4096];
    while (raw.size() < kMaxBytes && (in.read(buffer, sizeof(buffer)) || in.gcount() > 0))
        raw.append(buffer, size_t(in.gcount()));
    if (raw.size() > kMaxBytes) raw.resize(kMaxBytes);
    std::vector<std::string> args;
    size_t begin = 0;
    while (begin < raw.size()) {
        size_t end = raw.find('\0', begin);
        if (end == std::string::npos) end = raw.size();
        args.emplace_back(raw, begin, end - begin);
        begin = end + 1;
    }
    return args;
}

// The arguments joined by spaces, for people to read (cut at 4 KiB).
std::string commandLine(const std::vector<std::string>& args) {
    std::string line;
    for (const std::string& a : args) line += (line.empty() ? "" : " ") + a;
    if (line.size() > 4096) line.resize(4096);
    return line;
}

// The arguments as a JSON list of strings, exactly (cut at whole arguments).
std::string commandJson(const std::vector<std::string>& args) {
    return jsonStringList(args, 16 * 1024);
}

std::string hostName() {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0) return {};
    return name;
}

}  // namespace

ProcessIdentity currentProcess() {
    ProcessIdentity p;
    p.pid = static_cast<int64_t>(getpid());
    // torchrun's variables, else Slurm's (srun), Open MPI's, MPICH's: the
    // same order as the Python hook's (memscope_hook/config.py).
    for (const char* name : {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"})
        if (!p.rank) p.rank = intFromEnv(name);
    for (const char* name :
         {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})
        if (!p.local_rank) p.local_rank = intFromEnv(name);
    return p;
}

std::string traceFileName(const ProcessIdentity& process) {
    std::string name = env::kFilePrefix + std::to_string(process.pid);
    if (process.rank) name += "-rank" + std::to_string(*process.rank);
    if (process.local_rank) name += "-local" + std::to_string(*process.local_rank);
    return name + env::kFileSuffix;
}

TraceMetadata traceMetadata(const ProcessIdentity& process, const TracerOptions& options) {
    TraceMetadata m;
    m.source_format = "memscope-cupti";
    m.time_base = TimeBase::Nanoseconds;
    m.pid = process.pid;
    m.rank = process.rank.value_or(-1);
    // Named after the program (a Python script: the script) and its rank.
    const std::vector<std::string> args = commandArguments();
    m.name = runNameFromCommand(args, m.rank);
    if (m.name.empty()) m.name = fallbackRunName(process.pid, m.rank);

    // Sampled back to back: CUPTI's clock is the time base of every event;
    // the others let a reader map it to wall or monotonic time.
    m.setProperty("clock.time_base", "cupti");
    m.setProperty("clock.cupti_ns", std::to_string(cuptiNowNs()));
    m.setProperty("clock.wall_ns", std::to_string(wallNowNs()));
    m.setProperty("clock.monotonic_ns", std::to_string(monotonicNowNs()));
    uint32_t version = 0;
    if (cuptiGetVersion(&version) == CUPTI_SUCCESS)
        m.setProperty("cupti.api_version", std::to_string(version));
    m.setProperty("cupti.api_version_compiled", std::to_string(CUPTI_API_VERSION));
    m.setProperty("recorder.allocation_level", options.tensor_level ? "tensor" : "segment");
    m.setProperty("recorder.stacks", options.stacks ? "1" : "0");
    m.setProperty("recorder.vmm_callbacks", options.vmm_callbacks ? "1" : "0");
    if (options.vmm_for_expandable_segments)
        m.setProperty("recorder.vmm_callbacks_reason", "expandable_segments");
    if (process.local_rank) m.setProperty("local_rank", std::to_string(*process.local_rank));
    if (const auto world = intFromEnv("WORLD_SIZE"))
        m.setProperty("world_size", std::to_string(*world));
    m.setProperty("host", hostName());
    m.setProperty("command", commandLine(args));
    m.setProperty("argv", commandJson(args));
    return m;
}

}  // namespace memscope::cupti
