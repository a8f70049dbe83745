#pragma once
// What a recorded run is called where people see it (`summary`, `compare`, the
// GUI's tabs and compare views): the script or program it ran, and its rank,
// "train.py rank 1", from the command line the recorders keep (the CUPTI
// tracer's /proc/self/cmdline, the Python hook's sys.orig_argv and sys.argv).
// And, when several runs on show share a name (two runs of one script), the
// one rule that tells them apart.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memscope {

// The run's name from a process's command line, " rank R" appended when
// rank >= 0:
//   - a Python interpreter (python, python3, python3.11, /usr/bin/python3.11,
//     ...): its options are skipped (-u, -O, -X opt, -W arg, -Xdev, -uB) and
//     the script's base name is the name ("train.py"); `-m MOD` names the
//     module ("torch.distributed.run"); `-c CODE` is "python -c"; no script
//     (the interactive interpreter) is "python", stdin ("-") "python -";
//   - sys.argv as Python shows it ([script, args...]): argv[0] "-c" is
//     "python -c", "-m" "python -m", "" (interactive) "python";
//   - anything else: argv[0]'s base name ("./a.out" -> "a.out").
// "" when argv is empty or names nothing (argv[0] empty or only slashes).
std::string runNameFromCommand(const std::vector<std::string>& argv, int rank);

// A Python process's name from what the hook recorded: sys.orig_argv when it
// starts with the interpreter (Python 3.10+), else sys.argv. When orig_argv
// only says "python -c" but the program renamed itself in sys.argv (launchers
// that set sys.argv before runpy), sys.argv[0] names it. "" when neither
// names anything.
std::string runNameFromPython(const std::vector<std::string>& orig_argv,
                              const std::vector<std::string>& argv, int rank);

// "pid N" (" rank R" when rank >= 0): for a run whose command line is not
// known. "" when the pid is not known either (pid < 0).
std::string fallbackRunName(int64_t pid, int rank);

// A run recorded with a checkpointing policy applied (memscope-cli record
// --apply; the trace's "applied_policy" property): "train.py (applied:
// POLICY)". Unchanged when `policy` is empty or the name says so already.
std::string appliedRunName(std::string name, std::string_view policy);

// True for an interpreter's base name: python, python3, python3.11,
// python3.13t, python3.11d.
bool isPythonInterpreter(const std::string& program);

// One run on show, for distinctRunNames.
struct RunLabel {
    std::string name;  // its name ("" = unnamed: its file's name stands in)
    int64_t pid = -1;  // the process recorded, -1 when unknown or several
    std::string path;  // the file or folder it was opened from
    // A simulation (the trace's own Trace::prediction, never its name):
    // shown as "NAME (predicted)" wherever runs are named.
    bool predicted = false;
    // The policy a recording applied (its "applied_policy" property): shown
    // as "NAME (applied: POLICY)" where its name does not say so.
    std::string applied_policy = {};
};

// The names to show, parallel to `runs`: each run's name, and where several
// share one, what tells them apart: " (pid N)" when their pids are known and
// differ, else " (FILE)" (the file's base name) when those differ, else the
// path, else " (2)", " (3)", ... after the first. Names that stay unique stay
// as they are; an unnamed run is shown by its file's base name. A predicted
// run's name ends in " (predicted)", added where its name does not say so.
std::vector<std::string> distinctRunNames(const std::vector<RunLabel>& runs);

}  // namespace memscope
