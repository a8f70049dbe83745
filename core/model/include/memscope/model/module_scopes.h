#pragma once
// Where in the model memory was taken: the modules of a network (interned once
// each) and the time ranges in which they ran (module scopes). A stream of
// its own, apart from the training phases: phases say *when* (step, forward,
// backward), modules say *where* ("h.3.attn.c_attn").
//
// Scopes are recorded (the Python hook's module hooks, the trainer's blocks)
// or inferred (from the Python frames of a snapshot, module_inference.h);
// which one is a property of the whole stream, never mixed in one trace.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memscope/model/types.h"

namespace memscope {

class Trace;

using ModuleId = StrongId<struct ModuleTag>;  // ModuleId n refers to modules[n - 1]; 0 = none

// Values are stored on disk: append only, never reorder.
enum class ModuleScopeKind : uint8_t {
    Forward = 0,    // the module's forward
    Recompute = 1,  // its forward run again inside backward (checkpointing)
    Backward = 2,   // its backward (global module backward hooks, PyTorch 2.0+)
};
inline constexpr int kModuleScopeKindCount = 3;
std::string_view toString(ModuleScopeKind kind);  // "forward", "recompute", "backward"

// Where a trace's modules come from. Values are stored on disk.
enum class ModuleSource : uint8_t {
    None = 0,      // the trace has no modules: views say so
    Recorded = 1,  // the producer recorded the module calls (or a trainer its block phases)
    Inferred = 2,  // memscope found them in the allocations' Python frames
};
std::string_view toString(ModuleSource source);  // "none", "recorded", "inferred"

struct Module {
    // The qualified name under its root module, as named_modules() gives it
    // ("h.3.attn.c_attn"); "" for the root itself.
    StringId path;
    // The root module's label ("GPT"): tells the roots of a job with several
    // (a GAN's generator and discriminator) apart.
    StringId root;
    StringId type;       // class name ("CausalSelfAttention"); "" when unknown
    ModuleId parent;     // the enclosing module; 0 for a root
    uint16_t depth = 0;  // 0 = a root; a child is its parent's depth + 1
};

struct ModuleScope {
    int64_t start = 0;  // same unit as Event::time
    int64_t end = 0;    // exclusive; end <= start holds no event
    ModuleId module;
    ModuleScopeKind kind = ModuleScopeKind::Forward;
};

// Bounds for hostile files: a path longer than this is cut (with "…"), and a
// module deeper than this takes the deepest allowed ancestor's place.
inline constexpr size_t kMaxModulePathBytes = 4096;
inline constexpr uint16_t kMaxModuleDepth = 256;

class ModuleTable {
public:
    ModuleSource source = ModuleSource::None;
    std::vector<Module> modules;      // add() only, so that severalRoots() stays right
    std::vector<ModuleScope> scopes;  // any order; ModuleAttribution sorts its copy

    bool empty() const { return modules.empty(); }
    const Module* module(ModuleId id) const {
        return id.value >= 1 && id.value <= modules.size() ? &modules[id.value - 1] : nullptr;
    }
    // Adds a module after clamping what hostile input could make unbounded:
    // a parent that is not an earlier module becomes 0, depth follows the
    // parent (capped at kMaxModuleDepth). Does not deduplicate: interning by
    // (root, path) is the producer's business (ModuleInterner below).
    ModuleId add(Module m);
    // Whether the modules added have more than one root label.
    bool severalRoots() const { return several_roots_; }

private:
    bool several_roots_ = false;
};

// Interns modules by (root, path) for producers and importers: the same
// module gets one id however often it runs. Parents are made on the way
// ("h.3" before "h.3.attn").
class ModuleInterner {
public:
    explicit ModuleInterner(Trace& trace) : trace_(trace) {}
    // `path` is dotted; "" is the root. The type is set when first given.
    ModuleId intern(std::string_view root, std::string_view path, std::string_view type = {});

private:
    Trace& trace_;
    struct Key {
        uint32_t root, path;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& k) const { return (size_t(k.root) << 32) ^ k.path; }
    };
    std::unordered_map<Key, ModuleId, KeyHash> ids_;
};

// "h.3.attn.c_attn"; the root alone reads as its label ("GPT"); with several
// roots in the trace every path starts with its root's label ("Generator/main.0").
std::string modulePath(const Trace& trace, ModuleId id);
// Whether the trace's modules have more than one root.
bool hasSeveralRoots(const Trace& trace);

// The layer a module belongs to: its shallowest ancestor-or-self whose last
// path component is a number (an element of a ModuleList or Sequential:
// "h.3"), else its ancestor at depth 1 ("wte", "lm_head"), else the root.
ModuleId layerOf(const Trace& trace, ModuleId id);
// Its ancestor-or-self at `depth` (itself when shallower).
ModuleId ancestorAtDepth(const Trace& trace, ModuleId id, uint16_t depth);
// Whether `id` is `ancestor` or nested in it.
bool moduleWithin(const Trace& trace, ModuleId id, ModuleId ancestor);

// The last dotted component of a path ("c_attn"), "" for a root.
std::string_view lastPathComponent(std::string_view path);

}  // namespace memscope
