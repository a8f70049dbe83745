// Importer "native": recognized by its magic. A damaged tail is not an error
// (the reader keeps every good chunk); what was lost is a DamagedTail warning
// through the task context, never text in the trace.
#include <cstring>

#include "memscope/format/native_format.h"
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
        return importNativeTrace(path, ctx);
    }
};

}  // namespace

std::unique_ptr<Importer> makeNativeImporter() {
    return std::make_unique<NativeImporter>();
}

}  // namespace memscope
