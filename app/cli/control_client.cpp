#include "control_client.h"

#include <poll.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxReply = 1 << 20;

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// A folder of this user that no one else may enter (not a link).
bool privateFolder(const fs::path& folder) {
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0) return false;
    return S_ISDIR(st.st_mode) && st.st_uid == ::getuid() && (st.st_mode & 077) == 0;
}

std::optional<pid_t> pidOfSocketName(const std::string& name) {
    if (!name.ends_with(".sock")) return std::nullopt;
    const std::string_view digits(name.data(), name.size() - 5);
    int64_t pid = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0 || pid > INT32_MAX)
        return std::nullopt;
    return pid_t(pid);
}

// MEMSCOPE_* variables of a process of this user, from /proc/PID/environ.
std::map<std::string, std::string> memscopeEnvironment(pid_t pid) {
    std::map<std::string, std::string> out;
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string entry;
    while (std::getline(in, entry, '\0')) {
        if (!entry.starts_with("MEMSCOPE_")) continue;
        const auto eq = entry.find('=');
        if (eq != std::string::npos) out[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    return out;
}

fs::path normalFolder(const fs::path& p) {
    std::error_code ec;
    fs::path out = fs::weakly_canonical(fs::absolute(p, ec), ec);
    return ec ? p.lexically_normal() : out;
}

std::string joinPaths(const std::vector<fs::path>& paths) {
    std::string out;
    for (const fs::path& p : paths) out += (out.empty() ? "" : ", ") + p.string();
    return out;
}

// Asks one socket for its status; removes it when it is stale.
std::optional<JobProcess> ask(const fs::path& socket, pid_t pid, std::string* problem,
                              bool categories) {
    if (!processAlive(pid)) {
        std::error_code ec;
        fs::remove(socket, ec);  // stale: its process is gone
        return std::nullopt;
    }
    auto reply = controlRequest(
        socket, categories ? R"({"cmd":"status","categories":true})" : R"({"cmd":"status"})", 5000);
    if (!reply) {
        if (reply.message().find(std::strerror(ECONNREFUSED)) != std::string::npos) {
            std::error_code ec;
            fs::remove(socket, ec);  // nobody listens: a process that reused the pid
        } else if (problem) {
            *problem = reply.message();
        }
        return std::nullopt;
    }
    auto status = parseStatus(*reply);
    if (!status) {
        if (problem) *problem = socket.string() + ": " + status.message();
        return std::nullopt;
    }
    if (status->pid != pid) {
        if (problem)
            *problem = socket.string() + ": answered for process " + std::to_string(status->pid);
        return std::nullopt;
    }
    return JobProcess{pid, socket, *status};
}

std::vector<JobProcess> scan(const std::vector<fs::path>& folders,
                             std::vector<std::string>& problems, bool categories) {
    std::vector<JobProcess> out;
    std::vector<pid_t> seen;
    for (const fs::path& folder : folders) {
        if (!privateFolder(folder)) continue;
        std::error_code ec;
        for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
            const auto pid = pidOfSocketName(it->path().filename().string());
            if (!pid || std::find(seen.begin(), seen.end(), *pid) != seen.end()) continue;
            std::string problem;
            if (auto p = ask(it->path(), *pid, &problem, categories)) {
                seen.push_back(*pid);
                out.push_back(std::move(*p));
            } else if (!problem.empty()) {
                problems.push_back(problem);
            }
        }
    }
    std::sort(out.begin(), out.end(), [](const JobProcess& a, const JobProcess& b) {
        return std::tie(a.status.rank, a.pid) < std::tie(b.status.rank, b.pid);
    });
    return out;
}

std::optional<int64_t> int64Member(const rapidjson::Value& v, const char* key) {
    if (!v.IsObject()) return std::nullopt;
    auto it = v.FindMember(key);
    if (it == v.MemberEnd() || !it->value.IsInt64()) return std::nullopt;
    return it->value.GetInt64();
}

std::string stringMember(const rapidjson::Value& v, const char* key) {
    if (!v.IsObject()) return {};
    auto it = v.FindMember(key);
    return it != v.MemberEnd() && it->value.IsString() ? it->value.GetString() : std::string();
}

}  // namespace

bool processAlive(pid_t pid) {
    return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

std::vector<fs::path> socketFolders(const fs::path& output_dir) {
    std::vector<fs::path> out;
    if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg == '/')
        out.push_back(fs::path(xdg) / "memscope");
    if (!output_dir.empty()) out.push_back(output_dir / ".memscope-control");
    return out;
}

Result<std::string> controlRequest(const fs::path& socket, const std::string& line,
                                   int timeout_ms) {
    const std::string where = socket.string() + ": ";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket.native().size() >= sizeof(addr.sun_path))
        return makeError(where + "path too long for a Unix socket");
    std::memcpy(addr.sun_path, socket.c_str(), socket.native().size());
    Fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    if (s.fd < 0) return makeError(where + std::strerror(errno));
    if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0)
        return makeError(where + std::strerror(errno));
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(s.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::getuid())
        return makeError(where + "refused: the process behind it runs as another user");
    const std::string out = line + "\n";
    const int64_t deadline = nowMs() + timeout_ms;
    for (size_t sent = 0; sent < out.size();) {
        const ssize_t n = ::send(s.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return makeError(where + std::strerror(errno));
        }
        sent += size_t(n);
    }
    std::string reply;
    char buffer[4096];
    while (reply.find('\n') == std::string::npos) {
        const int64_t left = deadline - nowMs();
        if (left <= 0) return makeError(where + "no answer in time");
        pollfd p{s.fd, POLLIN, 0};
        const int r = ::poll(&p, 1, int(left));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return makeError(where + "no answer in time");
        const ssize_t n = ::recv(s.fd, buffer, sizeof(buffer), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return makeError(where + std::strerror(errno));
        if (n == 0) break;
        reply.append(buffer, size_t(n));
        if (reply.size() > kMaxReply) return makeError(where + "answer too long");
    }
    const auto nl = reply.find('\n');
    if (nl == std::string::npos) return makeError(where + "closed without an answer");
    reply.resize(nl);
    return reply;
}

Result<void> replyOk(const std::string& reply) {
    rapidjson::Document d;
    d.Parse(reply.c_str(), reply.size());
    if (d.HasParseError() || !d.IsObject()) return makeError("the answer is not a JSON object");
    auto ok = d.FindMember("ok");
    if (ok == d.MemberEnd() || !ok->value.IsBool()) return makeError("the answer has no \"ok\"");
    if (!ok->value.GetBool()) {
        const std::string error = stringMember(d, "error");
        return makeError(error.empty() ? "refused" : error);
    }
    return {};
}

Result<ControlStatus> parseStatus(const std::string& reply) {
    if (auto ok = replyOk(reply); !ok) return ok.error();
    rapidjson::Document d;
    d.Parse(reply.c_str(), reply.size());
    ControlStatus s;
    s.pid = pid_t(int64Member(d, "pid").value_or(-1));
    s.rank = int(int64Member(d, "rank").value_or(-1));
    s.local_rank = int(int64Member(d, "local_rank").value_or(-1));
    s.output_dir = stringMember(d, "output_dir");
    s.step = int64Member(d, "step");
    s.steps_done = int64Member(d, "steps_done").value_or(0);
    s.phase = stringMember(d, "phase");
    s.time_ns = int64Member(d, "time_ns").value_or(0);
    if (auto w = d.FindMember("window"); w != d.MemberEnd() && w->value.IsObject()) {
        s.window = stringMember(w->value, "id");
        s.window_state = stringMember(w->value, "state");
        s.window_first_step = int64Member(w->value, "first_step");
        s.window_last_step = int64Member(w->value, "last_step");
    }
    if (auto done = d.FindMember("done"); done != d.MemberEnd() && done->value.IsArray())
        for (const auto& entry : done->value.GetArray())
            s.done.push_back(stringMember(entry, "id"));
    if (auto mem = d.FindMember("memory"); mem != d.MemberEnd() && mem->value.IsObject()) {
        if (auto c = mem->value.FindMember("cuda"); c != mem->value.MemberEnd()) {
            s.cuda_live = int64Member(c->value, "live");
            s.cuda_reserved = int64Member(c->value, "reserved");
        }
        if (auto c = mem->value.FindMember("categories");
            c != mem->value.MemberEnd() && c->value.IsObject())
            for (const auto& m : c->value.GetObject())
                if (m.value.IsInt64())
                    s.categories.emplace_back(m.name.GetString(), m.value.GetInt64());
        if (auto c = mem->value.FindMember("modules");
            c != mem->value.MemberEnd() && c->value.IsArray())
            for (const auto& m : c->value.GetArray())
                if (m.IsArray() && m.Size() == 2 && m[0].IsString() && m[1].IsInt64())
                    s.modules.emplace_back(m[0].GetString(), m[1].GetInt64());
        if (auto c = mem->value.FindMember("cpu"); c != mem->value.MemberEnd()) {
            s.cpu_live = int64Member(c->value, "live");
            s.cpu_tensors = int64Member(c->value, "tensors");
        }
    }
    if (auto argv = d.FindMember("argv"); argv != d.MemberEnd() && argv->value.IsArray())
        for (const auto& a : argv->value.GetArray())
            if (a.IsString()) s.argv += (s.argv.empty() ? "" : " ") + std::string(a.GetString());
    return s;
}

Result<std::vector<JobProcess>> findJob(const std::string& target, bool categories) {
    const std::string start_hint =
        "start the job with: memscope-cli record --idle -o DIR -- CMD (or call "
        "memscope_hook.attachable() in it)";
    int64_t pid_value = 0;
    auto [end, ec] = std::from_chars(target.data(), target.data() + target.size(), pid_value);
    const bool is_pid = ec == std::errc() && end == target.data() + target.size() &&
                        pid_value > 0 && pid_value <= INT32_MAX && !fs::exists(target);
    std::vector<std::string> problems;
    fs::path output_dir;
    if (is_pid) {
        const pid_t pid = pid_t(pid_value);
        if (!processAlive(pid)) return makeError("no process " + target + " is running");
        const auto environment = memscopeEnvironment(pid);
        if (auto it = environment.find("MEMSCOPE_OUTPUT_DIR"); it != environment.end())
            output_dir = it->second;
        std::optional<JobProcess> found;
        const auto folders = socketFolders(output_dir);
        for (const fs::path& folder : folders) {
            if (!privateFolder(folder)) continue;
            std::string problem;
            found = ask(folder / (std::to_string(pid) + ".sock"), pid, &problem, false);
            if (found) break;
            if (!problem.empty()) problems.push_back(problem);
        }
        if (!found) {
            std::string why =
                "process " + target + " runs no memscope hook that can be attached to";
            if (environment.count("MEMSCOPE_HOOK") && !environment.count("MEMSCOPE_IDLE"))
                why +=
                    " (it was started by memscope-cli record without --idle: it records "
                    "already)";
            else if (!problems.empty())
                why += " (" + problems.front() + ")";
            else
                why += " (no control socket in " +
                       (folders.empty() ? std::string("$XDG_RUNTIME_DIR/memscope")
                                        : joinPaths(folders)) +
                       ")";
            return makeError(why + "; " + start_hint);
        }
        output_dir = found->status.output_dir;
        if (output_dir.empty()) return std::vector<JobProcess>{std::move(*found)};
    } else {
        std::error_code fec;
        if (!fs::is_directory(target, fec))
            return makeError(target + " is neither a running process's pid nor a folder");
        output_dir = target;
    }
    const fs::path wanted = normalFolder(output_dir);
    std::vector<JobProcess> job;
    for (JobProcess& p : scan(socketFolders(wanted), problems, categories))
        if (normalFolder(p.status.output_dir) == wanted) job.push_back(std::move(p));
    if (job.empty()) {
        std::string why =
            "no running process records to " + wanted.string() + " and can be attached to";
        if (!problems.empty()) why += " (" + problems.front() + ")";
        return makeError(why + "; " + start_hint);
    }
    return job;
}

}  // namespace memscope::cli
