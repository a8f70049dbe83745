#pragma once
// What a Python interpreter's command line says about its start-up: the flags
// that keep memscope's hook (a sitecustomize on PYTHONPATH) from loading.

#include <string>
#include <vector>

namespace memscope::cli {

struct PythonFlags {
    bool isolated = false;    // -I: PYTHONPATH ignored (implies -E and -s)
    bool ignore_env = false;  // -E: PYTHON* variables ignored, PYTHONPATH among them
    bool no_site = false;     // -S: the site module, and so sitecustomize, not imported
};

// Whether argv[0] names a Python interpreter (python, python3, python3.11, ...).
bool isPythonInterpreter(const std::string& program);

// The interpreter's own options in argv[1...], combined ones too (-IS, -uI),
// up to the script, -m, -c, "-" or "--". Options with a value (-W, -X,
// --check-hash-based-pycs) take it, attached or as the next word.
PythonFlags parsePythonFlags(const std::vector<std::string>& argv);

}  // namespace memscope::cli
