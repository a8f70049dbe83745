#include "process_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <deque>
#include <filesystem>
#include <set>
#include <string_view>
#include <system_error>

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;

// A /proc file whole (their size is not known before reading).
std::optional<std::string> readProcFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string text;
    char buffer[16384];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
            text.append(buffer, size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        ::close(fd);
        if (n < 0) return std::nullopt;
        return text;
    }
}

std::vector<std::string> splitNul(const std::string& text) {
    std::vector<std::string> words;
    size_t begin = 0;
    while (begin < text.size()) {
        size_t end = text.find('\0', begin);
        if (end == std::string::npos) end = text.size();
        words.emplace_back(text, begin, end - begin);
        begin = end + 1;
    }
    return words;
}

struct Stat {
    bool zombie = false;  // gone but not reaped: its memory, arguments and maps are gone
    pid_t ppid = 0;
    uint64_t start_time = 0;
    uint64_t exec_mark = 0;  // arg_start: a fork keeps it, an exec moves it
};

uint64_t number(std::string_view text) {
    uint64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

// /proc/PID/stat: the name in parentheses may hold spaces and parentheses, so
// the fields are counted from the last ')'.
std::optional<Stat> readStat(const std::string& pid) {
    const auto text = readProcFile("/proc/" + pid + "/stat");
    if (!text) return std::nullopt;
    const size_t close = text->rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::vector<std::string_view> fields;  // fields[0] is field 3 (state)
    std::string_view rest = std::string_view(*text).substr(close + 1);
    while (!rest.empty()) {
        const size_t start = rest.find_first_not_of(" \n");
        if (start == std::string_view::npos) break;
        rest.remove_prefix(start);
        const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
        fields.push_back(rest.substr(0, end));
        rest.remove_prefix(end);
    }
    if (fields.size() < 20) return std::nullopt;
    Stat s;
    s.zombie = fields[0] == "Z" || fields[0] == "X";
    s.ppid = pid_t(number(fields[1]));                         // field 4
    s.start_time = number(fields[19]);                         // field 22
    if (fields.size() > 45) s.exec_mark = number(fields[45]);  // field 48, since Linux 3.5
    return s;
}

bool mapsLibTorch(const std::string& maps) {
    static constexpr std::string_view kLibraries[] = {"libtorch.so", "libtorch_cpu.so",
                                                      "libtorch_python.so", "libc10.so"};
    size_t begin = 0;
    while (begin < maps.size()) {
        size_t end = maps.find('\n', begin);
        if (end == std::string::npos) end = maps.size();
        const std::string_view line(maps.data() + begin, end - begin);
        begin = end + 1;
        const size_t slash = line.rfind('/');
        if (slash == std::string_view::npos) continue;
        const std::string_view name = line.substr(slash + 1);
        for (std::string_view lib : kLibraries)
            if (name.starts_with(lib) && (name.size() == lib.size() || name[lib.size()] == '.'))
                return true;
    }
    return false;
}

// Only for a live process: a zombie's environment reads empty too.
void readEnvironment(const std::string& pid, WatchedProcess& p) {
    const auto text = readProcFile("/proc/" + pid + "/environ");
    if (!text) return;  // not ours to read: what was read before stays
    p.environment_read = true;
    p.memscope_hook.reset();
    p.python_path.reset();
    for (const std::string& entry : splitNul(*text)) {
        if (entry.starts_with("MEMSCOPE_HOOK=")) p.memscope_hook = entry.substr(14);
        if (entry.starts_with("PYTHONPATH=")) p.python_path = entry.substr(11);
    }
}

}  // namespace

void ProcessWatch::start(pid_t root) {
    if (thread_.joinable()) return;
    root_ = root;
    if (auto own = readStat(std::to_string(getpid()))) own_exec_mark_ = own->exec_mark;
    // Signals stay with record's own loop: the thread inherits a full mask.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    try {
        thread_ = std::thread([this] { run(); });
    } catch (const std::system_error&) {
        // No thread, no watch: the run goes on, its explanations are vaguer.
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

std::vector<WatchedProcess> ProcessWatch::stop() {
    if (thread_.joinable()) {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    std::vector<const Tracked*> order;
    for (const auto& [key, t] : tracked_) order.push_back(&t);
    std::sort(order.begin(), order.end(),
              [](const Tracked* a, const Tracked* b) { return a->order < b->order; });
    std::vector<WatchedProcess> out;
    for (const Tracked* t : order) out.push_back(t->seen);
    return out;
}

void ProcessWatch::run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        lock.unlock();
        try {
            look();
        } catch (const std::exception&) {
            // Out of memory reading /proc: try again next time.
        }
        lock.lock();
        wake_.wait_for(lock, period_, [this] { return stopping_; });
    }
}

void ProcessWatch::look() {
    // Every process's parent, to find the command's descendants.
    std::map<pid_t, Stat> stats;
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (auto s = readStat(name)) stats[pid_t(number(name))] = *s;
    }
    std::map<pid_t, std::vector<pid_t>> children;
    for (const auto& [pid, s] : stats) children[s.ppid].push_back(pid);

    // The command, its descendants, and those seen before whose parent has
    // gone (an orphan is adopted by init, but is still the command's).
    std::deque<pid_t> queue = {root_};
    for (const auto& [key, t] : tracked_) {
        auto s = stats.find(key.first);
        if (s != stats.end() && s->second.start_time == key.second) queue.push_back(key.first);
    }
    std::set<pid_t> visited;
    while (!queue.empty()) {
        const pid_t pid = queue.front();
        queue.pop_front();
        auto s = stats.find(pid);
        if (s == stats.end() || !visited.insert(pid).second) continue;
        for (pid_t child : children[pid]) queue.push_back(child);

        const Stat& stat = s->second;
        const std::string pid_text = std::to_string(pid);
        auto [it, added] = tracked_.try_emplace({pid, stat.start_time});
        Tracked& t = it->second;
        if (added) {
            t.order = next_order_++;
            t.seen.pid = pid;
        }
        t.seen.ppid = stat.ppid;
        // A zombie shows nothing of what it ran: what was seen before stays.
        if (stat.zombie) continue;
        // 0: not shown (no permission): then no exec is noticed.
        const bool exec_changed = !added && stat.exec_mark != 0 && stat.exec_mark != t.exec_mark;
        if (stat.exec_mark != 0) t.exec_mark = stat.exec_mark;
        if (exec_changed) t.seen.torch = false;  // a new program in the same process
        // Once LibTorch is in, the program is known: no more reading its maps.
        if (t.seen.torch) continue;

        // The parent's mark, or record's own for the command before its exec.
        uint64_t parent_mark = 0;
        if (stat.ppid == getpid()) {
            parent_mark = own_exec_mark_;
        } else if (auto p = stats.find(stat.ppid); p != stats.end()) {
            parent_mark = p->second.exec_mark;
        }
        t.seen.forked_copy = stat.exec_mark != 0 && stat.exec_mark == parent_mark;
        if (const auto maps = readProcFile("/proc/" + pid_text + "/maps"))
            t.seen.torch = mapsLibTorch(*maps);
        // Read after the maps, so that what goes with LibTorch is its program's.
        // A process that just went has an empty command line (and
        // environment): what was read before stays. A live one's environment
        // may well be empty (env -i).
        if (const auto cmdline = readProcFile("/proc/" + pid_text + "/cmdline");
            cmdline && !cmdline->empty()) {
            t.seen.argv = splitNul(*cmdline);
            readEnvironment(pid_text, t.seen);
        }
    }
}

}  // namespace memscope::cli
