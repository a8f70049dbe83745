// Exporter "native": writes a whole Trace with writeNativeTrace.
#include "memscope/format/native_format.h"
#include "native_plugin.h"

namespace memscope {
namespace {

class NativeExporter final : public Exporter {
public:
    std::string id() const override { return "native"; }
    std::string description() const override { return "memscope native trace"; }
    std::string extension() const override { return ".memscope"; }

    Result<void> exportTrace(const Trace& trace, const std::string& path,
                             const TaskContext& ctx) const override {
        if (ctx.cancelled()) return cancelledError();
        return writeNativeTrace(trace, path);
    }
};

}  // namespace

std::unique_ptr<Exporter> makeNativeExporter() {
    return std::make_unique<NativeExporter>();
}

}  // namespace memscope
