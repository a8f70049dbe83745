// MemoryViz HTML pages: find the embedded snapshot, decode its base64 and hand
// the bytes to the snapshot importer, so that the trace is the one the
// embedded pickle gives, under the same limits.
#include <algorithm>
#include <filesystem>
#include <functional>

#include "base64_decoder.h"
#include "memory_viz_page.h"
#include "memscope/base/file_io.h"
#include "memscope/plugins/pytorch_snapshot.h"

namespace memscope::pytorch_snapshot {
namespace {

// Decoding is fast next to unpickling: it gets the first quarter of the bar.
constexpr double kDecodeShare = 0.25;
// Pieces of base64 decoded between two releases of the page and two polls.
constexpr size_t kPiece = size_t(16) << 20;

// `release(offset)`: the page before `offset` is no longer needed;
// `done_with_page()`: none of it is (called before unpickling, so that the
// page and the decoded snapshot are held together only while decoding).
Result<Trace> importPage(std::span<const std::byte> page, const TaskContext& ctx, std::string name,
                         const HtmlLimits& limits, const std::function<void(size_t)>& release,
                         const std::function<void()>& done_with_page) {
    if (!looksLikeHtml(page))
        return makeError(
            "not an HTML page (it does not start with <!DOCTYPE html>, <html> or a "
            "<script>)");
    auto found = findPayload(page);
    if (!found) return found.error();
    const PagePayload payload = std::move(*found);
    const auto total = double(page.size());

    std::vector<std::byte> snapshot;
    // Reserved once (at most 3/4 of the text, so never more than the page
    // itself), so that growing never holds two copies.
    const uint64_t text = payload.end - payload.begin;
    snapshot.reserve(size_t(std::min<uint64_t>(text / 4 * 3, limits.max_snapshot_bytes)));
    Base64Decoder decoder(snapshot, limits.max_snapshot_bytes);
    for (size_t at = payload.begin; at < payload.end;) {
        if (ctx.cancelled()) return cancelledError();
        const size_t n = std::min(kPiece, payload.end - at);
        if (auto ok = decoder.feed(page.subspan(at, n)); !ok) return ok.error();
        at += n;
        release(at);
        ctx.report(uint64_t(double(at) * kDecodeShare), page.size());
    }
    if (auto ok = decoder.finish(); !ok) return ok.error();
    done_with_page();

    const uint64_t decoded = std::max<uint64_t>(snapshot.size(), 1);
    TaskContext inner = ctx;
    inner.progress = [&ctx, decoded, total](uint64_t done, uint64_t) {
        const double share = kDecodeShare + (1 - kDecodeShare) * double(done) / double(decoded);
        ctx.report(uint64_t(share * total), uint64_t(total));
    };
    Result<Trace> trace = importBytes(snapshot, inner, std::move(name));
    if (!trace && trace.message() == cancelledError().message) return trace;
    if (!trace)
        return makeError(
            "the snapshot the page embeds" +
            (payload.file_name.empty() ? std::string() : " ('" + payload.file_name + "')") +
            " cannot be read: " + trace.message());
    trace->metadata.setProperty(std::string(kHtmlContainerKey), "memory_viz html page");
    if (!payload.view.empty()) trace->metadata.setProperty(std::string(kHtmlViewKey), payload.view);
    if (payload.more_files)
        ctx.warn(
            {WarningKind::SkippedRecords,
             "the page embeds more than one file; memscope read the first" +
                 (payload.file_name.empty() ? std::string() : " ('" + payload.file_name + "')"),
             0});
    return trace;
}

}  // namespace

int probeHtml(std::span<const std::byte> head, std::string_view path) {
    if (!looksLikeHtml(head)) return 0;
    if (mentionsMemoryViz(head)) return 100;
    // Some other page, or one saved again with the script further in: ours to
    // read or to explain ("holds no memory_viz snapshot"), as no other
    // importer reads HTML.
    return path.ends_with(".html") || path.ends_with(".htm") ? 30 : 15;
}

Result<Trace> importHtmlBytes(std::span<const std::byte> bytes, const TaskContext& ctx,
                              std::string name, const HtmlLimits& limits) {
    return importPage(
        bytes, ctx, std::move(name), limits, [](size_t) {}, [] {});
}

Result<Trace> importHtmlFile(const std::string& path, const TaskContext& ctx,
                             const HtmlLimits& limits) {
    auto file = InputFile::open(path);
    if (!file) return file.error();
    std::unique_ptr<InputFile> f = std::move(*file);
    bool shrank = false;
    std::string shrank_message;
    auto release = [&f](size_t offset) { f->dropBefore(offset); };
    auto done = [&] {
        shrank = f->shrank();
        if (shrank) shrank_message = f->shrankMessage();
        f.reset();
    };
    Result<Trace> trace = importPage(f->bytes(), ctx, std::filesystem::path(path).stem().string(),
                                     limits, release, done);
    // Cut while decoding: whatever was decoded is not the page the user has.
    if (f && f->shrank()) return makeError(f->shrankMessage());
    if (shrank) return makeError(shrank_message);
    return trace;
}

}  // namespace memscope::pytorch_snapshot
