// Importer "native": recognized by its magic. A damaged tail is not an error
// (the reader keeps every good chunk); what was lost is recorded in the
// trace's metadata as "load_warning" so that front ends can show it.
#include <cstring>

#include "memscope/native_format.h"
#include "native_plugin.h"

namespace memscope {
namespace {

class NativeImporter final : public Importer {
public:
    std::string id() const override { return "native"; }
    std::string description() const override { return "memscope native trace"; }
    std::vector<std::string> extensions() const override { return {".memscope"}; }

    int probe(std::span<const std::byte> head, std::string_view) const override {
        if (head.size() >= kNativeMagic.size() &&
            std::memcmp(head.data(), kNativeMagic.data(), kNativeMagic.size()) == 0)
            return 100;
        return 0;  // the extension alone proves nothing: the magic decides
    }

    Result<Trace> import(const std::string& path, const TaskContext& ctx) const override {
        NativeReadReport report;
        Result<Trace> trace = readNativeTrace(path, ctx, &report);
        if (!trace) {
            // The registry names the file itself: drop the reader's own "PATH: ".
            const std::string& message = trace.message();
            const std::string prefix = path + ": ";
            if (message.compare(0, prefix.size(), prefix) == 0)
                return makeError(message.substr(prefix.size()));
            return trace;
        }
        if (!report.problem.empty() && report.chunks_read == 0 && report.bytes_lost > 0) {
            // Nothing after the header could be read: an empty run would hide
            // that, so this is an error rather than a warning.
            return makeError("no readable chunk after the header (" +
                             std::to_string(report.bytes_lost) + " bytes): " + report.problem);
        }
        if (!report.problem.empty()) {
            trace->metadata.setProperty(
                "load_warning", "file damaged after " + std::to_string(report.chunks_read) +
                                    " good chunks (" + std::to_string(report.bytes_lost) + " of " +
                                    std::to_string(report.bytes_total) +
                                    " bytes lost): " + report.problem);
        }
        return trace;
    }
};

}  // namespace

std::unique_ptr<Importer> makeNativeImporter() {
    return std::make_unique<NativeImporter>();
}

}  // namespace memscope
