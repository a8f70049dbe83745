#include "record_diagnosis.h"

#include <filesystem>

#include "python_flags.h"

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;

bool samePath(const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    if (fs::path(a).lexically_normal() == fs::path(b).lexically_normal()) return true;
    std::error_code ec;
    return fs::equivalent(a, b, ec);
}

bool onPythonPath(const std::string& python_path, const std::string& folder) {
    size_t begin = 0;
    while (begin <= python_path.size()) {
        size_t end = python_path.find(':', begin);
        if (end == std::string::npos) end = python_path.size();
        if (samePath(python_path.substr(begin, end - begin), folder)) return true;
        begin = end + 1;
    }
    return false;
}

std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

// The lines that start the hook from the script itself.
std::string startItYourself(const RecordingOutcome& o, bool with_environment) {
    std::string lines = "start the hook yourself, first thing in the script:\n";
    if (with_environment)
        lines += "    import os; os.environ.setdefault(\"MEMSCOPE_OUTPUT_DIR\", " +
                 quoted(o.output_dir) + ")\n";
    lines += "    import sys; sys.path.insert(0, " + quoted(o.hook_folder) + ")\n";
    lines += "    import memscope_hook; memscope_hook.activate()";
    return lines;
}

std::string flagCause(const char* flag, const char* what) {
    return std::string("Python was started with ") + flag + what +
           ", so memscope's hook could not load. Drop " + flag + ", or ";
}

}  // namespace

std::string commandLine(const std::vector<std::string>& argv) {
    constexpr size_t kLongest = 120;
    std::string line;
    for (const std::string& word : argv) {
        if (!line.empty()) line += ' ';
        const bool plain = !word.empty() && word.find_first_of(" \t'\"") == std::string::npos;
        line += plain ? word : quoted(word);
    }
    if (line.size() > kLongest) line = line.substr(0, kLongest - 3) + "...";
    return line.empty() ? "(command line unknown)" : line;
}

std::optional<MissCause> hookBlocked(const WatchedProcess& p, const std::string& hook_folder) {
    if (p.argv.empty() || !isPythonInterpreter(p.argv[0])) return std::nullopt;
    const PythonFlags flags = parsePythonFlags(p.argv);
    if (flags.isolated) return MissCause::Isolated;
    if (flags.ignore_env) return MissCause::IgnoreEnvironment;
    if (flags.no_site) return MissCause::NoSite;
    if (!p.environment_read) return MissCause::NotExamined;
    if (p.memscope_hook != "1") return MissCause::EnvironmentCleared;
    if (!p.python_path || !onPythonPath(*p.python_path, hook_folder))
        return MissCause::PythonPathReset;
    return std::nullopt;
}

std::vector<Miss> findMisses(const std::vector<WatchedProcess>& processes,
                             const RecordingOutcome& outcome) {
    std::vector<Miss> misses;
    for (const WatchedProcess& p : processes) {
        if (!p.torch || p.forked_copy || outcome.recorded.count(p.pid)) continue;
        if (p.argv.empty() || !isPythonInterpreter(p.argv[0])) {
            // Without the hook's share of the recording, only a process that
            // recorded nothing at all is worth a word.
            if (outcome.nothing_recorded) misses.push_back({p, MissCause::NotPython});
            continue;
        }
        if (outcome.hook_folder.empty()) continue;  // --no-python-hook: asked for
        if (auto cause = hookBlocked(p, outcome.hook_folder)) {
            misses.push_back({p, *cause});
        } else if (outcome.nothing_recorded) {
            misses.push_back({p, MissCause::HookRecordedNothing});
        }
    }
    return misses;
}

std::string explainMiss(const Miss& m, const RecordingOutcome& o) {
    std::string text = "process " + std::to_string(m.process.pid) + " (" +
                       commandLine(m.process.argv) + ") imported torch but was not recorded: ";
    switch (m.cause) {
        case MissCause::Isolated:
            return text + flagCause("-I", " (isolated mode), which ignores PYTHONPATH") +
                   startItYourself(o, false);
        case MissCause::IgnoreEnvironment:
            return text +
                   flagCause("-E", ", which ignores PYTHONPATH (and every PYTHON* variable)") +
                   startItYourself(o, false);
        case MissCause::NoSite:
            return text +
                   flagCause("-S",
                             ", which skips the site module and with it memscope's "
                             "startup hook (a sitecustomize)") +
                   startItYourself(o, false);
        case MissCause::EnvironmentCleared:
            return text +
                   "its environment was cleared (MEMSCOPE_HOOK=1 is not set: env -i, or a "
                   "launcher that passes an environment of its own), so memscope's hook stayed "
                   "off. Keep the environment record sets (MEMSCOPE_HOOK, MEMSCOPE_OUTPUT_DIR, "
                   "PYTHONPATH), or " +
                   startItYourself(o, true);
        case MissCause::PythonPathReset:
            return text + "PYTHONPATH was reset by the script or a wrapper (it is " +
                   (m.process.python_path ? quoted(*m.process.python_path) : "unset") +
                   ", without memscope's hook folder " + o.hook_folder +
                   "), so the hook could not load. Add to PYTHONPATH instead of replacing it, or " +
                   startItYourself(o, false);
        case MissCause::HookRecordedNothing:
            return text +
                   "the hook was loaded, but there was nothing to record: torch was imported, "
                   "yet no training step ran (no backward, no optimizer step), CUDA was not used "
                   "and no CPU tensor was captured (" +
                   std::string(o.cpu_capture ? "memscope's CPU capture library did not load: "
                                               "this PyTorch may differ from the one memscope "
                                               "was built against"
                                             : "memscope's CPU capture library was not found") +
                   "). Record a run that trains, even for a step or two.";
        case MissCause::NotPython:
            return text +
                   "it is not a Python program, so memscope's Python hook cannot record it; "
                   "the CUPTI tracer records a C++ program's CUDA memory, and it used none.";
        case MissCause::NotExamined:
            return text + "its environment could not be read to tell why (" + "/proc/" +
                   std::to_string(m.process.pid) +
                   "/environ). Check that it keeps PYTHONPATH and MEMSCOPE_HOOK=1, or " +
                   startItYourself(o, true);
    }
    return text;
}

std::string listProcesses(const std::vector<WatchedProcess>& processes,
                          const std::string& hook_folder, size_t shown) {
    std::string text;
    size_t listed = 0, more = 0;
    for (const WatchedProcess& p : processes) {
        if (p.forked_copy || p.argv.empty()) continue;
        if (listed == shown) {
            ++more;
            continue;
        }
        ++listed;
        text += "\n  " + std::to_string(p.pid) + "  " + commandLine(p.argv);
        if (hook_folder.empty()) continue;
        if (auto cause = hookBlocked(p, hook_folder)) {
            switch (*cause) {
                case MissCause::Isolated:
                    text += "   (-I: the hook cannot load)";
                    break;
                case MissCause::IgnoreEnvironment:
                    text += "   (-E: the hook cannot load)";
                    break;
                case MissCause::NoSite:
                    text += "   (-S: the hook cannot load)";
                    break;
                case MissCause::EnvironmentCleared:
                    text += "   (environment cleared: the hook is off)";
                    break;
                case MissCause::PythonPathReset:
                    text += "   (PYTHONPATH reset: the hook cannot load)";
                    break;
                default:
                    break;
            }
        }
    }
    if (more) text += "\n  ... and " + std::to_string(more) + " more";
    return text;
}

}  // namespace memscope::cli
