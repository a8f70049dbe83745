// importNativeTrace: the native reader as front ends use it (the native
// importer plugin and openRun's fallback share it).
#include "memscope/format/native_format.h"

namespace memscope {

Result<Trace> importNativeTrace(const std::string& path, const TaskContext& ctx,
                                const NativeReadOptions& options, NativeReadReport* out) {
    NativeReadReport local;
    NativeReadReport& report = out ? *out : local;
    Result<Trace> trace = readNativeTrace(path, ctx, &report, options);
    if (!trace) {
        // Callers name the file themselves: drop the reader's own "PATH: ".
        const std::string& message = trace.message();
        const std::string prefix = path + ": ";
        if (message.compare(0, prefix.size(), prefix) == 0)
            return makeError(message.substr(prefix.size()));
        return trace;
    }
    if (!report.problem.empty() && report.chunks_read == 0 && report.bytes_lost > 0)
        return makeError("no readable chunk after the header (" +
                         std::to_string(report.bytes_lost) + " bytes): " + report.problem);
    if (!report.problem.empty())
        ctx.warn({WarningKind::DamagedTail,
                  "file damaged after " + std::to_string(report.chunks_read) + " good chunks (" +
                      std::to_string(report.bytes_lost) + " of " +
                      std::to_string(report.bytes_total) + " bytes lost): " + report.problem,
                  report.bytes_lost});
    return trace;
}

}  // namespace memscope
