#include "memscope/frames.h"

namespace memscope {

bool isNoiseFrame(const Trace& trace, FrameId id) {
    if (id.isNull() || id.value > trace.frames().size()) return false;
    // memory_viz's list: the unwinder and traceback capture, process start-up,
    // CPython's call machinery, dispatcher boxing and registration glue.
    static constexpr std::string_view kFunctions[] = {
        "unwind::unwind",  "CapturedTraceback::gather",
        "gather_with_cpp", "__libc_start_main",
        "PyEval_",         "PyObject_",
        "PyFunction_"};
    static constexpr std::string_view kFiles[] = {"core/boxing",
                                                  "/Register",
                                                  "/Redispatch",
                                                  "pythonrun.c",
                                                  "Modules/main.c",
                                                  "Objects/call.c",
                                                  "Objects/methodobject.c",
                                                  "pycore_ceval.h",
                                                  "ceval.c",
                                                  "cpython/abstract.h"};
    const Frame& f = trace.frame(id);
    const std::string_view fn = trace.string(f.function);
    const std::string_view file = trace.string(f.file);
    if (fn == "_start") return true;
    for (std::string_view n : kFunctions)
        if (fn.find(n) != std::string_view::npos) return true;
    for (std::string_view n : kFiles)
        if (file.find(n) != std::string_view::npos) return true;
    return false;
}

std::string frameText(const Trace& trace, FrameId id) {
    if (id.isNull() || id.value > trace.frames().size()) return "?";
    const Frame& f = trace.frame(id);
    std::string text(trace.string(f.function));
    if (text.empty()) text = "??";
    const std::string_view file = trace.string(f.file);
    if (!file.empty()) text += "  (" + std::string(file) + ":" + std::to_string(f.line) + ")";
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

}  // namespace memscope
