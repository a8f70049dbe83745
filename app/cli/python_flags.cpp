#include "python_flags.h"

#include <cctype>
#include <string_view>

namespace memscope::cli {

bool isPythonInterpreter(const std::string& program) {
    const size_t slash = program.rfind('/');
    std::string_view name(program);
    if (slash != std::string::npos) name.remove_prefix(slash + 1);
    if (!name.starts_with("python")) return false;
    name.remove_prefix(6);
    // python3.11, python3.11d, python3-dbg; not "pythonista" or "python-config".
    if (name.ends_with("-dbg")) name.remove_suffix(4);
    size_t i = 0;
    while (i < name.size() && (std::isdigit(static_cast<unsigned char>(name[i])) || name[i] == '.'))
        ++i;
    name.remove_prefix(i);
    return name.empty() || name == "d" || name == "m" || name == "dm" || name == "t";
}

PythonFlags parsePythonFlags(const std::vector<std::string>& argv) {
    PythonFlags flags;
    for (size_t i = 1; i < argv.size(); ++i) {
        const std::string& word = argv[i];
        if (word.size() < 2 || word[0] != '-' || word == "--") break;  // the script, or "-"
        if (word[1] == '-') {
            if (word == "--check-hash-based-pycs") ++i;  // its value
            continue;                                    // --help, --version, ...
        }
        for (size_t c = 1; c < word.size(); ++c) {
            const char letter = word[c];
            if (letter == 'c' || letter == 'm') return flags;  // what follows is the program's
            if (letter == 'W' || letter == 'X') {
                if (c + 1 == word.size()) ++i;  // the value is the next word
                break;                          // else the rest of this one
            }
            if (letter == 'I') flags.isolated = true;
            if (letter == 'E') flags.ignore_env = true;
            if (letter == 'S') flags.no_site = true;
        }
    }
    return flags;
}

}  // namespace memscope::cli
