#include "trace_file.h"

#include <cupti.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

#include "clock.h"
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

std::string commandLine() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : raw)
        if (c == '\0') c = ' ';
    while (!raw.empty() && raw.back() == ' ') raw.pop_back();
    if (raw.size() > 4096) raw.resize(4096);
    return raw;
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
    p.rank = intFromEnv("RANK");
    p.local_rank = intFromEnv("LOCAL_RANK");
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
    m.name = "pid " + std::to_string(process.pid);
    if (process.rank) m.name = "rank " + std::to_string(*process.rank);

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
    m.setProperty("command", commandLine());
    return m;
}

}  // namespace memscope::cupti
