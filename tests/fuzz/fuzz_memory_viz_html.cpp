// MemoryViz HTML pages on arbitrary bytes: the page search and the base64
// decoder, then (for pages whose payload decodes) the snapshot importer.
#include <cstddef>
#include <cstdint>
#include <span>

#include "memscope/plugins/pytorch_snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
    (void)memscope::pytorch_snapshot::probeHtml(bytes.first(std::min<size_t>(size, 4096)),
                                                "x.html");
    (void)memscope::pytorch_snapshot::importHtmlBytes(bytes);
    return 0;
}
