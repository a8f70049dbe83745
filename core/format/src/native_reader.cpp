// readNativeTrace: maps the file, checks the file header, and leaves the
// chunks to readChunks (native_chunk_reader.cpp). The first bad chunk ends the
// load, and what came before it is the result (docs/FORMAT.md, "Recovery").
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "memscope/base/file_io.h"
#include "memscope/format/native_format.h"
#include "memscope/model/module_bounds.h"
#include "native_chunk_reader.h"
#include "native_crc32c.h"
#include "native_layout.h"

namespace memscope {
namespace {

using namespace native;

Result<Trace> readBytes(const unsigned char* data, size_t size, const TaskContext& ctx,
                        NativeReadReport& report, const NativeReadOptions& options) {
    report = NativeReadReport();
    report.bytes_total = size;
    if (size < kNativeMagic.size() ||
        std::memcmp(data, kNativeMagic.data(), kNativeMagic.size()) != 0)
        return makeError("not a memscope native trace (no MEMSCOPE magic at the start)");
    if (size < kFileHeaderSize)
        return makeError("memscope native trace header cut short (" + std::to_string(size) +
                         " bytes)");
    if (crc32c(data, 12) != loadLE32(data + 12))
        return makeError("memscope native trace header is damaged (checksum mismatch)");
    const uint16_t major = loadLE16(data + 8);
    const uint16_t minor = loadLE16(data + 10);
    if (major != kVersionMajor)
        return makeError("memscope native trace version " + std::to_string(major) + "." +
                         std::to_string(minor) + " is not supported (this build reads version " +
                         std::to_string(kVersionMajor) + ".x)");
    try {
        Trace trace;
        if (readChunks(data, size, ctx, trace, report, options.tolerate_partial_tail) ==
            ReadOutcome::Cancelled)
            return cancelledError();
        // A digest's figures are checked once, here, against themselves and
        // its events: every front end then sees the same verdict.
        if (!report.digest_problem.empty())
            return makeError("a damaged digest: " + report.digest_problem);
        if (std::string why = digestContradiction(trace); !why.empty())
            return makeError("a damaged digest: " + why);
        // The modules chunk names strings of any length: cut once, here.
        if (const size_t cut = boundModuleStrings(trace))
            ctx.warn({WarningKind::ClampedValues,
                      std::to_string(cut) + " module name" + (cut == 1 ? "" : "s") +
                          " longer than " + std::to_string(kMaxModulePathBytes) + " bytes cut",
                      cut});
        // Writers may add an attribute after later events' ones; Trace keeps them sorted.
        if (!std::is_sorted(trace.attributes.begin(), trace.attributes.end(),
                            [](const auto& a, const auto& b) { return a.event < b.event; }))
            std::stable_sort(trace.attributes.begin(), trace.attributes.end(),
                             [](const auto& a, const auto& b) { return a.event < b.event; });
        return trace;
    } catch (const std::bad_alloc&) {
        return makeError("out of memory while reading the memscope native trace");
    } catch (const std::exception& e) {
        return makeError(std::string("cannot read the memscope native trace: ") + e.what());
    }
}

}  // namespace

Result<Trace> readNativeTrace(std::span<const std::byte> bytes, const TaskContext& ctx,
                              NativeReadReport* report, const NativeReadOptions& options) {
    NativeReadReport local;
    return readBytes(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), ctx,
                     report ? *report : local, options);
}

Result<Trace> readNativeTrace(const std::string& path, const TaskContext& ctx,
                              NativeReadReport* report, const NativeReadOptions& options) {
    NativeReadReport local;
    NativeReadReport& rep = report ? *report : local;
    rep = NativeReadReport();
    // A mapping, one pass and no copy, guarded so that a file another process
    // cuts short while we read it becomes an error rather than SIGBUS.
    auto file = InputFile::open(path, /*populate=*/true);
    if (!file) return makeError(path + ": " + file.message());
    const std::span<const std::byte> bytes = (*file)->bytes();
    if (bytes.empty()) return makeError(path + ": empty file, not a memscope native trace");
    Result<Trace> result = readBytes(reinterpret_cast<const unsigned char*>(bytes.data()),
                                     bytes.size(), ctx, rep, options);
    if ((*file)->shrank()) return makeError(path + ": " + (*file)->shrankMessage());
    if (!result) return makeError(path + ": " + result.message());
    return result;
}

}  // namespace memscope
