#pragma once
// Strings from a file made safe to show (issue 64, class 7): a trace, a
// page's name, a hook's argv or a module path may carry ESC]0;...BEL (a
// terminal's title), ESC[2J (a cleared screen), a newline (a forged line) or
// bytes that are not UTF-8 (which strict JSON parsers refuse). Every text
// renderer passes such strings through terminalText, and the JSON writers
// through validUtf8, so no front end copies them raw.

#include <string>
#include <string_view>

namespace memscope {

// Whether s is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF).
bool isValidUtf8(std::string_view s);

// s with each byte that does not start a well-formed UTF-8 sequence replaced
// by U+FFFD; s itself when it is valid.
std::string validUtf8(std::string_view s);

enum class TextLines {
    Escape,  // a newline or tab shown as \x0a, \x09: one string, one line
    Keep,    // newlines and tabs kept: a whole report, already laid out
};

// s for a terminal: invalid UTF-8 replaced by U+FFFD; C0 controls (ESC, BEL,
// CR, LF, ...) and DEL shown as \xNN, C1 controls and the bidirectional
// overrides as \uNNNN; everything else as it is.
std::string terminalText(std::string_view s, TextLines lines = TextLines::Escape);

}  // namespace memscope
