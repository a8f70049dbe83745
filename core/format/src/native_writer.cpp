// NativeTraceWriter: the single-threaded streaming writer, and writeNativeTrace
// for a whole Trace. Interning is NativeTables', chunk encoding ChunkWriter's.
#include <algorithm>

#include "memscope/base/file_io.h"
#include "memscope/format/native_format.h"
#include "native_chunk_writer.h"
#include "native_tables.h"

namespace memscope {

struct NativeTraceWriter::Impl {
    Impl(native::NativeTables t, std::unique_ptr<native::ChunkWriter> c)
        : tables(std::move(t)), chunks(std::move(c)) {}

    native::NativeTables tables;
    std::unique_ptr<native::ChunkWriter> chunks;
    std::vector<Event> events;  // appended since the last write
    uint64_t first_event = 0;   // index of events[0] in the trace
    bool closed = false;
    Result<void> close_result;

    void writePending() {
        if (closed) return;
        const native::PendingTables pending = tables.takePending();
        chunks->write(pending, events, first_event);
        first_event += events.size();
        events.clear();
    }
};

Result<std::unique_ptr<NativeTraceWriter>> NativeTraceWriter::create(
    const std::string& path, const TraceMetadata& metadata, const NativeWriterOptions& options) {
    const auto per_chunk = static_cast<uint32_t>(
        std::min<size_t>(options.events_per_chunk, native::kMaxEventsPerChunk));
    auto chunks = native::ChunkWriter::open(path, per_chunk);
    if (!chunks) return chunks.error();
    auto impl = std::unique_ptr<Impl>(new Impl{native::NativeTables(metadata), std::move(*chunks)});
    impl->events.reserve(impl->chunks->eventsPerChunk());
    std::unique_ptr<NativeTraceWriter> writer(new NativeTraceWriter(std::move(impl)));
    // The metadata goes out at once: even a file killed right away says what it was.
    if (auto r = writer->flush(); !r) return r.error();
    return writer;
}

NativeTraceWriter::NativeTraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NativeTraceWriter::~NativeTraceWriter() {
    if (impl_) (void)close();
}

StringId NativeTraceWriter::internString(std::string_view text) {
    return impl_->tables.internString(text);
}
FrameId NativeTraceWriter::internFrame(const Frame& frame) {
    return impl_->tables.internFrame(frame);
}
StackId NativeTraceWriter::internStack(std::span<const FrameId> frames) {
    return impl_->tables.internStack(frames);
}
uint32_t NativeTraceWriter::internStream(uint64_t stream) {
    return impl_->tables.internStream(stream);
}
ModuleId NativeTraceWriter::addModule(const Module& module) {
    return impl_->tables.addModule(module);
}
void NativeTraceWriter::addModuleScope(const ModuleScope& scope) {
    impl_->tables.addModuleScope(scope);
}
void NativeTraceWriter::addOpScope(const OpScope& scope) {
    impl_->tables.addOpScope(scope);
}
void NativeTraceWriter::setModuleSource(ModuleSource source) {
    impl_->tables.setModuleSource(source);
}
PhaseId NativeTraceWriter::addPhase(const Phase& phase) {
    return impl_->tables.addPhase(phase);
}
void NativeTraceWriter::endPhase(PhaseId id, int64_t end) {
    impl_->tables.endPhase(id, end);
}
void NativeTraceWriter::addAnnotation(const Annotation& annotation) {
    impl_->tables.addAnnotation(annotation);
}
void NativeTraceWriter::addAttribute(uint64_t event, StringId key, StringId value) {
    impl_->tables.addAttribute(event, key, value);
}
void NativeTraceWriter::setProperty(std::string key, std::string value) {
    impl_->tables.setProperty(std::move(key), std::move(value));
}
void NativeTraceWriter::setAllocatorState(const AllocatorState& state) {
    impl_->tables.setAllocatorState(state);
}
void NativeTraceWriter::setRunMetrics(const RunMetrics& metrics) {
    impl_->tables.setRunMetrics(metrics);
}

void NativeTraceWriter::setPrediction(const Prediction& prediction) {
    impl_->tables.setPrediction(prediction);
}

void NativeTraceWriter::setDigest(const DigestSection& digest) {
    impl_->tables.setDigest(digest);
}

uint64_t NativeTraceWriter::append(const Event& event) {
    Impl& d = *impl_;
    d.events.push_back(d.tables.sanitize(event));
    const uint64_t index = d.tables.nextEventIndex();
    if (d.events.size() >= d.chunks->eventsPerChunk()) d.writePending();
    return index;
}

uint64_t NativeTraceWriter::eventCount() const {
    return impl_->tables.eventCount();
}

Result<void> NativeTraceWriter::flush() {
    if (impl_->closed) return impl_->close_result;
    impl_->writePending();
    return impl_->chunks->flush();
}

Result<void> NativeTraceWriter::close() {
    Impl& d = *impl_;
    if (d.closed) return d.close_result;
    d.writePending();
    d.close_result = d.chunks->close();
    d.closed = true;
    return d.close_result;
}

namespace {

Result<void> writeWholeTrace(const Trace& trace, const std::string& path,
                             const NativeWriterOptions& options) {
    auto created = NativeTraceWriter::create(path, trace.metadata, options);
    if (!created) return created.error();
    NativeTraceWriter& w = **created;
    // Interning the tables in order gives every item its id in `trace`; a
    // mismatch means the trace's tables refer to ids they do not hold.
    const auto mismatch = [&](const char* what) {
        return makeError(path + ": cannot write: the trace's " + what + " are inconsistent");
    };
    for (uint32_t i = 1; i < trace.strings.size(); ++i)
        if (w.internString(trace.strings.get(StringId(i))).value != i) return mismatch("strings");
    const auto& frames = trace.frames();
    for (size_t i = 0; i < frames.size(); ++i)
        if (w.internFrame(frames[i]).value != i + 1) return mismatch("frames");
    for (size_t i = 1; i < trace.stackCount(); ++i)
        if (w.internStack(trace.stack(StackId(static_cast<uint32_t>(i)))).value != i)
            return mismatch("stacks");
    for (size_t i = 1; i < trace.streams.size(); ++i)
        if (w.internStream(trace.streams[i]) != i) return mismatch("streams");
    for (const Phase& p : trace.phases) w.addPhase(p);
    // Inferred modules are found again when the file is opened, like
    // inferred phases: a file holds only what was recorded.
    const bool modules = !trace.modules.empty() && trace.modules.source != ModuleSource::Inferred;
    if (modules) w.setModuleSource(trace.modules.source);
    if (modules)
        for (const Module& m : trace.modules.modules) w.addModule(m);
    for (const Event& e : trace.events) w.append(e);
    if (modules)
        for (const ModuleScope& s : trace.modules.scopes) w.addModuleScope(s);
    // Like modules, only recorded ops: inferred ones are found again.
    if (trace.ops.source == OpSource::Recorded)
        for (const OpScope& s : trace.ops.scopes) w.addOpScope(s);
    for (const Annotation& a : trace.annotations) w.addAnnotation(a);
    for (const EventAttribute& a : trace.attributes) w.addAttribute(a.event, a.key, a.value);
    if (trace.allocator_state) w.setAllocatorState(*trace.allocator_state);
    if (trace.metrics) w.setRunMetrics(*trace.metrics);
    if (trace.prediction) w.setPrediction(*trace.prediction);
    if (trace.digest) w.setDigest(*trace.digest);
    return w.close();
}

}  // namespace

// A whole trace replaces PATH only once it is complete: an old file survives a
// full disk, and no partial file is left behind.
Result<void> writeNativeTrace(const Trace& trace, const std::string& path,
                              const NativeWriterOptions& options) {
    return writeFileReplacing(
        path, [&](const std::string& temp) { return writeWholeTrace(trace, temp, options); });
}

}  // namespace memscope
