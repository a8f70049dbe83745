// The snapshot importer: probe, then run the safe unpickler with the mapper.
#include <filesystem>
#include <functional>
#include <optional>

#include "memscope/base/file_io.h"
#include "memscope/base/read_ahead.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "metadata_categories.h"
#include "pickle_machine.h"
#include "pickle_opcodes.h"
#include "snapshot_mapper.h"

namespace memscope::pytorch_snapshot {
namespace {

Result<Trace> run(std::span<const std::byte> bytes, const TaskContext& ctx, std::string name,
                  const std::function<void(uint64_t)>& consumed) {
    if (bytes.size() < 2 || uint8_t(bytes[0]) != pickle::PROTO)
        return makeError("not a pickle of protocol 2 or later (no PROTO opcode at the start)");
    Trace trace;
    trace.metadata.source_format = std::string(kId);
    trace.metadata.name = std::move(name);
    SnapshotMapper mapper(trace);
    pickle::Machine machine(bytes, mapper, pickle::Limits::forInput(bytes.size()));
    Result<pickle::Value> root = machine.run(ctx, consumed);
    if (!root) return root.error();
    if (auto ok = mapper.finish(machine, *root, ctx); !ok) return ok.error();
    // PyTorch's and frameworks' own labels, before any inference rule.
    labelFromMetadata(trace);
    for (LoadWarning& w : mapper.warnings()) ctx.warn(std::move(w));
    return trace;
}

}  // namespace

int probe(std::span<const std::byte> head, std::string_view path) {
    if (head.size() < 3 || uint8_t(head[0]) != pickle::PROTO) return 0;
    const int version = int(head[1]);
    if (version < 2 || version > 5) return 0;
    size_t i = 2;
    // Protocol 4+ writers open with a FRAME; skip its 8-byte length.
    if (uint8_t(head[i]) == pickle::FRAME) {
        if (head.size() < 12) return 40;
        i = 11;
    }
    const uint8_t next = uint8_t(head[i]);
    // A snapshot starts with its top-level dict (or, for old dumps, a list).
    if (next == pickle::EMPTY_DICT || next == pickle::EMPTY_LIST || next == pickle::MARK) {
        const bool named = path.ends_with(".pickle") || path.ends_with(".pkl");
        return named ? 95 : 80;
    }
    return 20;  // some other pickle: we may still read it, others should win
}

Result<Trace> importBytes(std::span<const std::byte> bytes, const TaskContext& ctx,
                          std::string name) {
    return run(bytes, ctx, std::move(name), {});
}

Result<Trace> importFile(const std::string& path, const TaskContext& ctx) {
    // Guarded: a file cut short by another process while it is read gives an
    // error, never SIGBUS.
    auto file = InputFile::open(path);
    if (!file) return file.error();
    InputFile& f = **file;
    // The input is copied into huge pages on another core, 32 MiB ahead of
    // the unpickler at most (a smaller file costs more in a thread than it
    // saves).
    std::optional<ReadAhead> ahead;
    if (f.bytes().size() >= (64u << 20)) ahead.emplace(f, size_t(32) << 20);
    // Memo references reach back a little; dropping pages more than 64 MiB behind
    // the reader costs at most a page fault from the page cache when one does.
    auto consumed = [&f, &ahead](uint64_t offset) {
        if (ahead) ahead->reached(size_t(offset));
        if (offset > (64u << 20)) f.dropBefore(size_t(offset - (64u << 20)));
    };
    Result<Trace> trace =
        run(f.bytes(), ctx, std::filesystem::path(path).stem().string(), consumed);
    if (f.shrank()) return makeError(f.shrankMessage());
    return trace;
}

}  // namespace memscope::pytorch_snapshot
