#include "memscope/inference/frames.h"

#include <array>
#include <string_view>

#include "text_match.h"

namespace memscope {
namespace {

using detail::contains;
using detail::endsWith;
using detail::startsWith;

bool isPythonFile(std::string_view file) {
    return endsWith(file, ".py") || endsWith(file, ".pyx");
}

// C and C++ frames that stand between the user's code and the allocator.
bool isNativeNoise(std::string_view fn, std::string_view file) {
    // memory_viz's own list: unwinder, traceback capture, start-up.
    static constexpr std::array<std::string_view, 7> kMemoryViz = {
        "unwind::unwind",  "CapturedTraceback::gather",
        "gather_with_cpp", "__libc_start_main",
        "PyEval_",         "PyObject_",
        "PyFunction_"};
    // The caching allocator and the tensor factories that call it.
    static constexpr std::array<std::string_view, 9> kAllocator = {
        "CachingAllocator", "c10::alloc",        "at::detail::empty",
        "_empty_strided",   "at::native::empty", "c10::Allocator",
        "c10::StorageImpl", "c10::TensorImpl",   "c10::intrusive_ptr"};
    // The dispatcher and its generated wrappers; the autograd engine's threads.
    static constexpr std::array<std::string_view, 14> kDispatch = {
        "c10::Dispatcher",         "c10::impl::",
        "c10::KernelFunction",     "c10::BoxedKernel",
        "c10::OperatorHandle",     "at::_ops::",
        "c10::callUnboxed",        "at::redispatch",
        "torch::ADInplaceOrView",  "torch::autograd::VariableType",
        "torch::autograd::Engine", "torch::autograd::python::PythonEngine",
        "PyInterpreter",           "torch::autograd::Node::operator()"};
    // CPython's C API and call machinery, threads and process start-up.
    static constexpr std::array<std::string_view, 13> kRuntimePrefixes = {
        "Py",
        "_Py",
        "THPVariable_",
        "THPFunction_",
        "THPEngine_",
        "pymain_",
        "__libc_",
        "_start",
        "start_thread",
        "__clone",
        "clone",
        "std::",
        "dynamo__custom_eval_frame"};
    // Files of the dispatcher, the interpreter and the C library.
    static constexpr std::array<std::string_view, 14> kFiles = {"core/boxing",
                                                                "/Register",
                                                                "/Redispatch",
                                                                "pythonrun.c",
                                                                "Modules/main.c",
                                                                "Objects/call.c",
                                                                "Objects/methodobject.c",
                                                                "pycore_ceval.h",
                                                                "ceval.c",
                                                                "cpython/abstract.h",
                                                                "/csu/",
                                                                "/nptl/",
                                                                "sysdeps/",
                                                                "CUDACachingAllocator.cpp"};
    for (std::string_view n : kMemoryViz)
        if (contains(fn, n)) return true;
    for (std::string_view n : kAllocator)
        if (contains(fn, n)) return true;
    for (std::string_view n : kDispatch)
        if (contains(fn, n)) return true;
    for (std::string_view p : kRuntimePrefixes)
        if (startsWith(fn, p)) return true;
    for (std::string_view f : kFiles)
        if (contains(file, f)) return true;
    // The dispatcher's generated registrations (RegisterCUDA.cpp, ...) also
    // appear without a directory.
    return startsWith(file, "Register") || startsWith(file, "Redispatch");
}

// torch.nn.Module's call wrappers: every module call passes through them.
bool isModuleWrapper(std::string_view fn, std::string_view file) {
    return endsWith(file, "torch/nn/modules/module.py") &&
           (fn == "_call_impl" || fn == "_wrapped_call_impl" || fn == "__call__");
}

// Installed packages (torch among them), the standard library and generated code.
bool isLibraryPython(std::string_view file) {
    static constexpr std::array<std::string_view, 8> kPaths = {
        "/site-packages/", "/dist-packages/", "torchinductor",   "<frozen",
        "/lib/python3",    "<string>",        "<eval_with_key>", "/torch/"};
    for (std::string_view p : kPaths)
        if (contains(file, p)) return true;
    return startsWith(file, "torch/");
}

}  // namespace

FrameRole frameRole(const Trace& trace, FrameId id) {
    if (id.isNull() || id.value > trace.frames().size()) return FrameRole::Noise;
    const Frame& f = trace.frame(id);
    const std::string_view fn = trace.string(f.function);
    const std::string_view file = trace.string(f.file);
    // Names past 4 KiB are no real code location; not scanning them keeps the
    // rule's cost bounded whatever a file holds.
    if (fn.size() > 4096 || file.size() > 4096) return FrameRole::Library;
    if (isPythonFile(file)) {
        if (isModuleWrapper(fn, file)) return FrameRole::Noise;
        return isLibraryPython(file) ? FrameRole::Library : FrameRole::User;
    }
    if (fn == "_start" || isNativeNoise(fn, file)) return FrameRole::Noise;
    return FrameRole::Library;
}

std::vector<FrameRole> frameRoles(const Trace& trace) {
    std::vector<FrameRole> roles(trace.frames().size() + 1, FrameRole::Noise);
    FrameRoleCache cache(trace);
    for (uint32_t i = 1; i <= trace.frames().size(); ++i) roles[i] = cache.role(FrameId(i));
    return roles;
}

namespace {

// A frame's name or file as shown: a hostile trace can name a frame with
// megabytes (shared through the pickle memo, so cheap to load), and a label
// per site would copy them all. Cut at a UTF-8 character boundary.
constexpr size_t kMaxShownPart = 240;

std::string shownPart(std::string_view text) {
    if (text.size() <= kMaxShownPart) return std::string(text);
    size_t cut = kMaxShownPart;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return std::string(text.substr(0, cut)) + "…";
}

}  // namespace

std::string frameText(const Trace& trace, FrameId id) {
    if (id.isNull() || id.value > trace.frames().size()) return "?";
    const Frame& f = trace.frame(id);
    std::string text = shownPart(trace.string(f.function));
    if (text.empty()) text = "??";
    const std::string_view file = trace.string(f.file);
    if (!file.empty()) text += "  (" + shownPart(file) + ":" + std::to_string(f.line) + ")";
    return text;
}

std::vector<FrameId> visibleFrames(const Trace& trace, StackId stack, size_t max) {
    std::vector<FrameId> out;
    if (stack.isNull() || stack.value >= trace.stackCount()) return out;
    for (FrameId f : trace.stack(stack)) {
        if (out.size() >= max) break;
        if (!isNoiseFrame(trace, f)) out.push_back(f);
    }
    return out;
}

FrameRole FrameRoleCache::role(FrameId id) {
    if (id.isNull() || id.value > trace_.frames().size()) return FrameRole::Noise;
    const Frame& f = trace_.frame(id);
    const uint64_t key = uint64_t(f.function.value) << 32 | f.file.value;
    auto [it, fresh] = by_strings_.try_emplace(key, FrameRole::Noise);
    if (fresh) it->second = frameRole(trace_, id);
    return it->second;
}

std::optional<FrameId> siteFrame(const Trace& trace, StackId stack) {
    FrameRoleCache cache(trace);
    return siteFrame(trace, stack, cache);
}

std::optional<FrameId> siteFrame(const Trace& trace, StackId stack, FrameRoleCache& cache) {
    if (stack.isNull() || stack.value >= trace.stackCount()) return std::nullopt;
    std::optional<FrameId> library;
    for (FrameId f : trace.stack(stack)) {
        const FrameRole role = cache.role(f);
        if (role == FrameRole::User) return f;
        if (role == FrameRole::Library && !library) library = f;
    }
    return library;
}

std::string siteLabel(const Trace& trace, StackId stack) {
    const auto f = siteFrame(trace, stack);
    return f ? frameText(trace, *f) : std::string();
}

}  // namespace memscope
