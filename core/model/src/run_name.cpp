#include "memscope/model/run_name.h"

#include <map>
#include <set>
#include <string_view>

namespace memscope {
namespace {

// A command line comes from the process recorded: a name stays readable.
constexpr size_t kMaxNameBytes = 200;

constexpr std::string_view kPredictedSuffix = " (predicted)";

std::string baseName(std::string_view path) {
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    const size_t slash = path.rfind('/');
    if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
    return std::string(path);
}

// Cut at a character boundary (never inside a UTF-8 sequence).
std::string capped(std::string name) {
    if (name.size() <= kMaxNameBytes) return name;
    size_t end = kMaxNameBytes;
    while (end > 0 && (static_cast<unsigned char>(name[end]) & 0xC0) == 0x80) --end;
    name.resize(end);
    return name;
}

std::string withRank(std::string name, int rank) {
    if (name.empty()) return name;
    name = capped(std::move(name));
    if (rank >= 0) name += " rank " + std::to_string(rank);
    return name;
}

// The interpreter's command line, argv[0] being the interpreter: what it runs
// (CPython's option syntax: `python [option...] (-c cmd | -m mod | file | -) [arg...]`).
std::string pythonCommandName(const std::vector<std::string>& argv) {
    for (size_t i = 1; i < argv.size(); ++i) {
        const std::string& arg = argv[i];
        if (arg == "--") return i + 1 < argv.size() ? baseName(argv[i + 1]) : "python";
        if (arg == "-") return "python -";
        if (arg.size() < 2 || arg[0] != '-') return baseName(arg);  // the script
        if (arg[1] == '-') {
            // Long options: only --check-hash-based-pycs takes a value.
            if (arg == "--check-hash-based-pycs") ++i;
            continue;
        }
        // A group of short flags ("-uB"); -c, -m, -W and -X take the rest of
        // the group, or the next argument, as their value.
        for (size_t k = 1; k < arg.size(); ++k) {
            const char flag = arg[k];
            if (flag != 'c' && flag != 'm' && flag != 'W' && flag != 'X') continue;
            std::string value;
            if (k + 1 < arg.size())
                value = arg.substr(k + 1);
            else if (i + 1 < argv.size())
                value = argv[++i];
            if (flag == 'c') return "python -c";
            if (flag == 'm') return value.empty() ? "python -m" : value;
            break;  // -W / -X: the value is consumed
        }
    }
    return "python";  // the interactive interpreter
}

// The name without the rank.
std::string commandName(const std::vector<std::string>& argv) {
    if (argv.empty()) return {};
    const std::string& first = argv.front();
    // sys.argv as a Python program sees it.
    if (first == "-c") return "python -c";
    if (first == "-m") return "python -m";  // while the module is still being found
    if (first.empty()) return "python";     // the interactive interpreter
    std::string program = baseName(first);
    if (isPythonInterpreter(program)) return pythonCommandName(argv);
    return program;
}

}  // namespace

bool isPythonInterpreter(const std::string& program) {
    const std::string_view p = program;
    if (!p.starts_with("python")) return false;
    std::string_view rest = p.substr(6);
    // A version (3, 3.11), then the build's letters (3.13t free-threaded, 3.11d debug).
    size_t i = 0;
    while (i < rest.size() && ((rest[i] >= '0' && rest[i] <= '9') || rest[i] == '.')) ++i;
    if (i > 0 && (rest[0] == '.' || rest[i - 1] == '.')) return false;
    rest.remove_prefix(i);
    return rest.find_first_not_of("dmt") == std::string_view::npos && rest.size() <= 2 &&
           (i > 0 || rest.empty());
}

std::string runNameFromCommand(const std::vector<std::string>& argv, int rank) {
    return withRank(commandName(argv), rank);
}

std::string runNameFromPython(const std::vector<std::string>& orig_argv,
                              const std::vector<std::string>& argv, int rank) {
    if (!orig_argv.empty() && isPythonInterpreter(baseName(orig_argv.front()))) {
        std::string name = pythonCommandName(orig_argv);
        // `python -c "...; sys.argv = ['train', ...]; runpy.run_path(...)"`:
        // the program's own name is the better one.
        if (name == "python -c" && !argv.empty() && !argv.front().empty() && argv.front() != "-c" &&
            !baseName(argv.front()).empty())
            name = commandName(argv);
        return withRank(std::move(name), rank);
    }
    std::string name = commandName(argv);
    if (name.empty()) name = commandName(orig_argv);
    return withRank(std::move(name), rank);
}

std::string fallbackRunName(int64_t pid, int rank) {
    if (pid < 0) return {};
    return withRank("pid " + std::to_string(pid), rank);
}

std::string appliedRunName(std::string name, std::string_view policy) {
    if (policy.empty()) return name;
    const std::string suffix = " (applied: " + std::string(policy) + ")";
    if (!name.ends_with(suffix)) name += suffix;
    return name;
}

std::vector<std::string> distinctRunNames(const std::vector<RunLabel>& runs) {
    std::vector<std::string> names;
    names.reserve(runs.size());
    for (const RunLabel& r : runs) {
        names.push_back(
            appliedRunName(r.name.empty() ? baseName(r.path) : r.name, r.applied_policy));
        // Provenance from the trace, not its name: a predicted file renamed
        // like the measured run is still shown as a prediction.
        if (r.predicted && !names.back().ends_with(kPredictedSuffix))
            names.back() += kPredictedSuffix;
    }

    std::map<std::string, std::vector<size_t>> by_name;
    for (size_t i = 0; i < names.size(); ++i) by_name[names[i]].push_back(i);
    std::vector<std::string> out = names;
    auto allDistinct = [](const std::vector<std::string>& values) {
        std::set<std::string> seen;
        for (const std::string& v : values)
            if (v.empty() || !seen.insert(v).second) return false;
        return true;
    };
    for (const auto& [name, group] : by_name) {
        if (group.size() < 2) continue;
        std::vector<std::string> pids, files, paths;
        for (size_t i : group) {
            pids.push_back(runs[i].pid >= 0 ? "pid " + std::to_string(runs[i].pid) : "");
            files.push_back(baseName(runs[i].path));
            paths.push_back(runs[i].path);
        }
        const std::vector<std::string>* suffixes = allDistinct(pids)    ? &pids
                                                   : allDistinct(files) ? &files
                                                   : allDistinct(paths) ? &paths
                                                                        : nullptr;
        for (size_t k = 0; k < group.size(); ++k) {
            if (suffixes)
                out[group[k]] = name + " (" + (*suffixes)[k] + ")";
            else if (k > 0)
                out[group[k]] = name + " (" + std::to_string(k + 1) + ")";
        }
    }
    // A suffixed name may meet a run named so already: later ones are numbered.
    std::set<std::string> taken;
    for (std::string& n : out) {
        if (taken.insert(n).second) continue;
        for (size_t k = 2;; ++k) {
            std::string candidate = n + " (" + std::to_string(k) + ")";
            if (taken.insert(candidate).second) {
                n = std::move(candidate);
                break;
            }
        }
    }
    return out;
}

}  // namespace memscope
