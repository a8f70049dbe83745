#pragma once
// Module strings of a table a reader took as it was (issue 64, class 3): a
// native file's modules chunk may name any string of its strings table, and
// 300 modules sharing one 16 MiB path were expanded per module by every view.

#include <cstddef>

namespace memscope {

class Trace;

// Cuts every module path, root label and class name longer than
// kMaxModulePathBytes (module_scopes.h; ModuleInterner cuts the same way)
// with "…": each distinct long string once, interned, however many modules
// share it. Returns how many modules it changed.
size_t boundModuleStrings(Trace& trace);

}  // namespace memscope
