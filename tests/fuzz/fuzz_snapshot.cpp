// The safe unpickler and the snapshot mapper on arbitrary bytes; a trace that
// loads also goes through the timeline and the exporter's reader of it.
#include <cstddef>
#include <cstdint>
#include <span>

#include "memscope/analysis/summary.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "memscope/timeline/timeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto trace = memscope::pytorch_snapshot::importBytes(
        std::span(reinterpret_cast<const std::byte*>(data), size));
    if (trace.ok()) {
        auto tl = memscope::Timeline::build(*trace);
        if (tl.ok()) (void)memscope::summarize(*trace, **tl);
    }
    return 0;
}
