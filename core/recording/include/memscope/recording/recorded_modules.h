#pragma once
// The Python hook's module scopes in a merged trace: its modules interned into
// Trace::modules (source Recorded), its scopes kept on the hook's clock, the
// one the phases and the allocator history use (CLOCK_REALTIME ns).

#include <cstddef>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/recording/hook_sidecar.h"

namespace memscope {

struct RecordedModulesStats {
    size_t modules = 0;
    size_t scopes = 0;
    size_t unknown_module = 0;  // scopes naming a module the log never defined: left out
};

// Adds `modules` (interned by root label and path: the same module gets one
// id, parents are made on the way) and the scopes of known modules, sorted
// by start, an enclosing scope before the ones it holds; exact duplicates
// are one. Nothing happens without modules.
RecordedModulesStats addRecordedModules(Trace& trace, const std::vector<HookModule>& modules,
                                        const std::vector<HookModuleScope>& scopes);

}  // namespace memscope
