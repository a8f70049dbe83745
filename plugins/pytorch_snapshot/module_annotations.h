#pragma once
// Module scopes through a snapshot. Each scope is a START and an END entry of
// 'external_annotations', where PyTorch writes its record_function ranges
// alike: named by the module's path (what another tool shows), with
// memscope's own keys for what such an entry lacks (memory_viz reads only
// the keys it knows). The importer takes entries with kModuleKindKey back as
// module scopes, never as phases or annotations.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::pytorch_snapshot {

inline constexpr std::string_view kModuleKindKey = "memscope_module";  // toString(ModuleScopeKind)
inline constexpr std::string_view kModulePathKey = "memscope_module_path";  // dotted, "" = root
inline constexpr std::string_view kModuleRootKey = "memscope_module_root";
inline constexpr std::string_view kModuleTypeKey = "memscope_module_type";

// "forward", "recompute", "backward"; nullopt for anything else.
std::optional<ModuleScopeKind> moduleScopeKind(std::string_view text);

// One START or END entry of a module scope, as read.
struct ModuleMark {
    int64_t time = 0;  // ns
    AnnotationStage stage = AnnotationStage::Start;
    ModuleScopeKind kind = ModuleScopeKind::Forward;
    StringId path, root, type;
};

// Pairs the marks into Trace::modules (source Recorded): an END closes the
// latest open START of its module and kind; a START never closed runs to the
// last event. Changes nothing without a START.
void addModuleScopes(Trace& trace, const std::vector<ModuleMark>& marks);

}  // namespace memscope::pytorch_snapshot
