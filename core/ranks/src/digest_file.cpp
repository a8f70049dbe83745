#include "memscope/ranks/digest_file.h"

#include <algorithm>
#include <filesystem>

#include "memscope/format/native_format.h"

namespace memscope {

Result<DigestWritten> writeDigest(const OpenedTrace& opened, const std::string& out) {
    if (!opened.trace || !opened.timeline)
        return makeError(opened.path + ": opened without its timeline; a digest needs it");
    if (opened.trace->digest)
        return makeError(opened.path + ": already a digest (digests are made from full traces)");
    const std::string stem = std::filesystem::path(opened.path).stem().string();
    DigestWritten w;
    w.digest = digestRank(*opened.trace, *opened.timeline, opened.path,
                          opened.trace->metadata.name.empty() ? stem : opened.trace->metadata.name);
    DigestLimits limits;
    // Each try halves what is kept one by one; with none kept the file is the
    // section and a remainder per category, far under the bound.
    for (;;) {
        const Trace digest = digestTrace(*opened.trace, *opened.timeline, w.digest, limits);
        if (auto written = writeNativeTrace(digest, out); !written)
            return makeError(out + ": " + written.message());
        std::error_code ec;
        w.bytes = std::filesystem::file_size(out, ec);
        if (ec) return makeError(out + ": " + ec.message());
        w.allocations = digest.digest->allocations;
        w.summed = digest.digest->summed_allocations;
        if (w.bytes <= kDigestMaxBytes || limits.allocations == 0) break;
        limits.allocations /= 2;
        limits.stack_depth = std::max<size_t>(8, limits.stack_depth / 2);
    }
    if (w.bytes > kDigestMaxBytes)
        return makeError(out + ": the digest is " + std::to_string(w.bytes) +
                         " bytes even with no allocation kept (over " +
                         std::to_string(kDigestMaxBytes) + ")");
    return w;
}

}  // namespace memscope
