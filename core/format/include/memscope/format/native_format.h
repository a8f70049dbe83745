#pragma once
// The native trace format (docs/FORMAT.md): magic, version, then append-only
// chunks, each with a checksum. Written while recording, so a killed process
// leaves a file that loads up to its last complete chunk.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"

namespace memscope {

struct NativeWriterOptions {
    size_t events_per_chunk = 64 * 1024;  // an events chunk is written when this many are pending
};

// Streaming writer. Not thread-safe: one thread calls it (BackgroundTraceWriter
// wraps it for producers on other threads). Ids it returns are the ids the
// reader will give back, so producers can keep them.
class NativeTraceWriter {
public:
    static Result<std::unique_ptr<NativeTraceWriter>> create(
        const std::string& path, const TraceMetadata& metadata,
        const NativeWriterOptions& options = {});
    ~NativeTraceWriter();  // closes; errors are lost, call close() to see them

    StringId internString(std::string_view text);
    FrameId internFrame(const Frame& frame);
    StackId internStack(std::span<const FrameId> frames);
    uint32_t internStream(uint64_t stream);
    PhaseId addPhase(const Phase& phase);
    void endPhase(PhaseId id, int64_t end);
    // Modules come before the scopes that name them (a parent before its
    // children); a scope naming a module not yet added is dropped.
    ModuleId addModule(const Module& module);
    void addModuleScope(const ModuleScope& scope);
    void setModuleSource(ModuleSource source);  // last value wins
    // A recorded op (Trace::ops, source Recorded); its name an interned
    // string. A file with op scopes reads back with OpSource::Recorded.
    void addOpScope(const OpScope& scope);
    void addAnnotation(const Annotation& annotation);
    void addAttribute(uint64_t event, StringId key, StringId value);
    void setProperty(std::string key, std::string value);  // last value wins
    void setAllocatorState(const AllocatorState& state);
    void setRunMetrics(const RunMetrics& metrics);  // last value wins
    // Marks the trace as predicted (memscope/model/prediction.h); last value wins.
    void setPrediction(const Prediction& prediction);
    // Marks the trace as a rank's digest (memscope/model/digest.h); last value wins.
    void setDigest(const DigestSection& digest);

    uint64_t append(const Event& event);  // returns the event's index in the trace
    uint64_t eventCount() const;

    // Writes everything pending as complete chunks and flushes the OS buffer.
    Result<void> flush();
    Result<void> close();

    struct Impl;

private:
    explicit NativeTraceWriter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

class CpuSet;

// Thread-safe front for producers (the CUPTI tracer, the trainer's memory hook):
// calls are cheap (a mutex and a vector push); a background thread writes
// chunks and flushes every flush_period, so a killed process loses at most
// about that much.
class BackgroundTraceWriter {
public:
    static Result<std::unique_ptr<BackgroundTraceWriter>> create(
        const std::string& path, const TraceMetadata& metadata,
        const NativeWriterOptions& options = {},
        std::chrono::milliseconds flush_period = std::chrono::milliseconds(1000));
    ~BackgroundTraceWriter();  // close()

    StringId internString(std::string_view text);
    FrameId internFrame(const Frame& frame);
    StackId internStack(std::span<const FrameId> frames);
    uint32_t internStream(uint64_t stream);
    PhaseId addPhase(const Phase& phase);
    void endPhase(PhaseId id, int64_t end);
    // For a producer that numbers its phases itself and hands them over in
    // batches (one lock per batch instead of three per phase): the id the
    // next phase will get, and the batch, whose phases' names are given as
    // text (`names`, parallel) and whose first phase must get `first`. Returns
    // false and adds nothing when it would not (another producer added
    // phases meanwhile) or when the lists' lengths differ.
    PhaseId nextPhaseId() const;
    bool addPhases(PhaseId first, std::span<const Phase> phases,
                   std::span<const std::string> names);
    void endPhases(std::span<const std::pair<PhaseId, int64_t>> ends);
    ModuleId addModule(const Module& module);
    void addModuleScope(const ModuleScope& scope);
    void setModuleSource(ModuleSource source);
    void addAnnotation(const Annotation& annotation);
    void addAttribute(uint64_t event, StringId key, StringId value);
    void setProperty(std::string key, std::string value);
    void setAllocatorState(const AllocatorState& state);
    void setRunMetrics(const RunMetrics& metrics);
    uint64_t append(const Event& event);
    // Many at once under one lock (a producer that batches per step).
    void append(std::span<const Event> events);

    Result<void> flush();  // synchronous: returns when the data is in the file
    Result<void> close();  // stops the thread; idempotent

    // Keeps the writer's thread on these CPUs (see cpu_set.h for why a
    // recorder would). False when the system refuses, and the thread runs
    // where it did. The thread also yields its core between chunks, so that
    // a thread waiting for that core gets it within one chunk's work.
    bool keepThreadOn(const CpuSet& cpus);

    struct Impl;

private:
    explicit BackgroundTraceWriter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Writes a whole Trace (used by `convert` and the tests).
Result<void> writeNativeTrace(const Trace& trace, const std::string& path,
                              const NativeWriterOptions& options = {});

struct NativeReadReport {
    uint64_t chunks_read = 0;
    uint64_t bytes_total = 0;
    uint64_t bytes_lost = 0;  // after the last good chunk
    std::string problem;      // empty when the whole file was good
    // Why the digest chunk could not be read (the file is then refused).
    std::string digest_problem;
    // With tolerate_partial_tail: the bytes of an incomplete last chunk, left
    // unread and not reported as a problem (the writer has not finished it).
    uint64_t bytes_pending = 0;
};

struct NativeReadOptions {
    // For a file still being written (following a recording): a last chunk
    // cut short (its header, or fewer bytes than it declares) ends the read
    // quietly, and its bytes are counted as bytes_pending, not bytes_lost.
    // A damaged chunk is still reported. Off: a cut chunk is damage.
    bool tolerate_partial_tail = false;
};

// Loads every good chunk. A truncated or corrupt tail is not an error: the trace
// up to the last good chunk is returned and `report` says what was lost. A file
// that is not a native trace, or whose header is damaged, is an error.
Result<Trace> readNativeTrace(const std::string& path, const TaskContext& ctx = {},
                              NativeReadReport* report = nullptr,
                              const NativeReadOptions& options = {});
// Same, from memory (fuzzing, tests).
Result<Trace> readNativeTrace(std::span<const std::byte> bytes, const TaskContext& ctx = {},
                              NativeReadReport* report = nullptr,
                              const NativeReadOptions& options = {});

// What front ends use: readNativeTrace, with a damaged tail reported as a
// DamagedTail warning through ctx, and a file of which no chunk after the
// header could be read made an error (an empty run would hide that). With
// options.tolerate_partial_tail (following a file being written), an
// incomplete last chunk is no damage and a file of only its header an empty
// trace; `report`, when given, says how many bytes wait to be completed.
Result<Trace> importNativeTrace(const std::string& path, const TaskContext& ctx = {},
                                const NativeReadOptions& options = {},
                                NativeReadReport* report = nullptr);

inline constexpr std::string_view kNativeMagic = "MEMSCOPE";  // 8 bytes at offset 0

}  // namespace memscope
