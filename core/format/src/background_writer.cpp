// BackgroundTraceWriter: producers intern and append under one mutex (cheap:
// hash lookups and a vector push); a thread takes what is pending, encodes
// and writes it outside the lock, and flushes every flush_period.
//
// fork(): a process that forks while a writer is alive (a training process
// starting data-loader workers) must not leave the child deadlocked. A
// pthread_atfork handler takes every writer's mutex before the fork, so the
// child's copy of each writer is in a consistent state, and releases them on
// both sides. In the child the writer thread does not exist: its copy of the
// writer turns inert (calls still return ids, nothing is written; flush()
// reports why) and its destructor neither joins the missing thread nor
// touches the parent's file or what the thread was using (those few objects
// are deliberately leaked). A child that wants a trace of its own creates a
// new writer on another path.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include "memscope/base/cpu_set.h"
#include "memscope/format/native_format.h"
#include "native_chunk_writer.h"
#include "native_tables.h"

namespace memscope {
namespace {

// Live writers, for the fork handlers. Never destroyed: a fork may come
// during static destruction.
struct ForkRegistry {
    std::mutex mutex;
    std::vector<BackgroundTraceWriter::Impl*> writers;
};
ForkRegistry& forkRegistry() {
    static auto* registry = new ForkRegistry;
    return *registry;
}

void prepareFork();
void parentAfterFork();
void childAfterFork();

}  // namespace

struct BackgroundTraceWriter::Impl {
    // What a forked child must not destroy (a condition variable with waiters
    // that do not exist in the child blocks its destruction; a joinable thread
    // object terminates), kept apart so that the child can leak just this.
    struct Sync {
        std::mutex mutex;
        std::condition_variable wake;     // to the thread: work, flush or stop
        std::condition_variable flushed;  // from the thread: a flush is done
        std::thread thread;
    };
    std::unique_ptr<Sync> sync = std::make_unique<Sync>();

    // Guarded by sync->mutex.
    native::NativeTables tables;
    std::vector<Event> events;  // appended since the thread last took them
    std::vector<Event> spare;   // the thread's emptied batch, to reuse its capacity
    uint64_t first_event = 0;   // index of events[0] in the trace
    uint64_t flush_requested = 0;
    uint64_t flush_done = 0;
    bool stop = false;
    bool thread_done = false;
    bool closed = false;
    bool in_child = false;  // this copy lives in a forked child
    std::string error;      // the first write error

    // Used by the thread only (and by create() before the thread starts).
    std::unique_ptr<native::ChunkWriter> chunks;
    const std::chrono::milliseconds period;
    const size_t per_chunk;  // the thread is woken when this many events wait

    Impl(TraceMetadata metadata, std::unique_ptr<native::ChunkWriter> c,
         std::chrono::milliseconds p)
        : tables(std::move(metadata)),
          chunks(std::move(c)),
          period(p),
          per_chunk(chunks->eventsPerChunk()) {}

    void run();
    Result<void> result() const {
        if (error.empty()) return {};
        return makeError(error);
    }
};

void BackgroundTraceWriter::Impl::run() {
    using Clock = std::chrono::steady_clock;
    std::unique_lock lock(sync->mutex);
    auto next_flush = Clock::now() + period;
    while (true) {
        sync->wake.wait_until(lock, next_flush, [&] {
            return stop || flush_requested > flush_done || events.size() >= per_chunk;
        });
        const bool due = Clock::now() >= next_flush;
        const uint64_t flush_target = flush_requested;
        const bool stopping = stop;
        const bool do_flush = due || flush_target > flush_done || stopping;

        native::PendingTables pending = tables.takePending();
        std::vector<Event> batch;
        batch.swap(spare);
        batch.swap(events);  // producers continue into the spare's capacity
        const uint64_t first = first_event;
        first_event += batch.size();
        lock.unlock();

        chunks->write(pending, batch, first);
        Result<void> r;
        if (stopping) {
            r = chunks->close();
        } else if (do_flush) {
            r = chunks->flush();
        }
        batch.clear();

        lock.lock();
        if (spare.capacity() < batch.capacity()) spare.swap(batch);
        if (!r && error.empty()) error = r.message();
        if (do_flush) {
            flush_done = flush_target;
            next_flush = Clock::now() + period;
        }
        if (stopping) {
            thread_done = true;
            sync->flushed.notify_all();
            return;
        }
        if (do_flush) sync->flushed.notify_all();
    }
}

namespace {

void prepareFork() {
    ForkRegistry& reg = forkRegistry();
    reg.mutex.lock();
    for (auto* w : reg.writers) w->sync->mutex.lock();
}

void parentAfterFork() {
    ForkRegistry& reg = forkRegistry();
    for (auto* w : reg.writers) w->sync->mutex.unlock();
    reg.mutex.unlock();
}

void childAfterFork() {
    // The forking thread took these locks in prepareFork and is the one
    // thread of the child, so it may release them.
    ForkRegistry& reg = forkRegistry();
    for (auto* w : reg.writers) {
        w->in_child = true;
        w->sync->mutex.unlock();
    }
    reg.writers.clear();  // the child's copies are no longer anyone's concern
    reg.mutex.unlock();
}

void registerWriter(BackgroundTraceWriter::Impl* w) {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(prepareFork, parentAfterFork, childAfterFork); });
    ForkRegistry& reg = forkRegistry();
    std::lock_guard lock(reg.mutex);
    reg.writers.push_back(w);
}

void unregisterWriter(BackgroundTraceWriter::Impl* w) {
    ForkRegistry& reg = forkRegistry();
    std::lock_guard lock(reg.mutex);
    std::erase(reg.writers, w);
}

}  // namespace

Result<std::unique_ptr<BackgroundTraceWriter>> BackgroundTraceWriter::create(
    const std::string& path, const TraceMetadata& metadata, const NativeWriterOptions& options,
    std::chrono::milliseconds flush_period) {
    const auto per_chunk = static_cast<uint32_t>(
        std::min<size_t>(options.events_per_chunk, native::kMaxEventsPerChunk));
    auto chunks = native::ChunkWriter::open(path, per_chunk);
    if (!chunks) return chunks.error();
    auto impl = std::make_unique<Impl>(metadata, std::move(*chunks),
                                       std::max(flush_period, std::chrono::milliseconds(1)));
    // Background work: between chunks, a thread that waits for this core
    // (the traced program's) gets it. Costs a system call per chunk.
    impl->chunks->yieldBetweenChunks(true);
    // The metadata goes out at once: even a process killed right away leaves a
    // file that says what it was.
    impl->chunks->write(impl->tables.takePending(), {}, 0);
    if (auto r = impl->chunks->flush(); !r) return r.error();
    impl->events.reserve(impl->per_chunk);

    Impl* raw = impl.get();
    registerWriter(raw);
    // The thread starts with every signal blocked (it inherits the mask), so a
    // SIGTERM meant for the traced process never lands on the thread that its
    // handler waits for to close the file.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    try {
        raw->sync->thread = std::thread([raw] {
            // Named, so that top, perf and debuggers tell it from the traced
            // program's threads (15 characters at most).
            pthread_setname_np(pthread_self(), "memscope-writer");
            raw->run();
        });
    } catch (const std::system_error& e) {
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        unregisterWriter(raw);
        return makeError(path + ": cannot start the writer thread: " + e.what());
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return std::unique_ptr<BackgroundTraceWriter>(new BackgroundTraceWriter(std::move(impl)));
}

BackgroundTraceWriter::BackgroundTraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

bool BackgroundTraceWriter::keepThreadOn(const CpuSet& cpus) {
    std::lock_guard lock(impl_->sync->mutex);
    if (impl_->thread_done || impl_->in_child || !impl_->sync->thread.joinable()) return false;
    return cpus.applyTo(impl_->sync->thread.native_handle());
}

BackgroundTraceWriter::~BackgroundTraceWriter() {
    (void)close();
    unregisterWriter(impl_.get());
    bool in_child;
    {
        std::lock_guard lock(impl_->sync->mutex);
        in_child = impl_->in_child;
    }
    if (in_child) {
        // See the top of this file: leak what the parent's thread owned.
        (void)impl_->sync.release();
        (void)impl_->chunks.release();
    }
}

#define MEMSCOPE_LOCKED(impl) std::lock_guard lock_((impl)->sync->mutex)

StringId BackgroundTraceWriter::internString(std::string_view text) {
    MEMSCOPE_LOCKED(impl_);
    return impl_->tables.internString(text);
}
FrameId BackgroundTraceWriter::internFrame(const Frame& frame) {
    MEMSCOPE_LOCKED(impl_);
    return impl_->tables.internFrame(frame);
}
StackId BackgroundTraceWriter::internStack(std::span<const FrameId> frames) {
    MEMSCOPE_LOCKED(impl_);
    return impl_->tables.internStack(frames);
}
uint32_t BackgroundTraceWriter::internStream(uint64_t stream) {
    MEMSCOPE_LOCKED(impl_);
    return impl_->tables.internStream(stream);
}
PhaseId BackgroundTraceWriter::addPhase(const Phase& phase) {
    MEMSCOPE_LOCKED(impl_);
    return impl_->tables.addPhase(phase);
}
void BackgroundTraceWriter::endPhase(PhaseId id, int64_t end) {
    MEMSCOPE_LOCKED(impl_);
    impl_->tables.endPhase(id, end);
}
ModuleId BackgroundTraceWriter::addModule(const Module& module) {
    MEMSCOPE_LOCKED(impl_);
    return impl_->tables.addModule(module);
}
void BackgroundTraceWriter::addModuleScope(const ModuleScope& scope) {
    MEMSCOPE_LOCKED(impl_);
    impl_->tables.addModuleScope(scope);
}
void BackgroundTraceWriter::setModuleSource(ModuleSource source) {
    MEMSCOPE_LOCKED(impl_);
    impl_->tables.setModuleSource(source);
}
PhaseId BackgroundTraceWriter::nextPhaseId() const {
    MEMSCOPE_LOCKED(impl_);
    return PhaseId(impl_->tables.phaseCount() + 1);
}
bool BackgroundTraceWriter::addPhases(PhaseId first, std::span<const Phase> phases,
                                      std::span<const std::string> names) {
    if (phases.size() != names.size()) return false;
    MEMSCOPE_LOCKED(impl_);
    native::NativeTables& t = impl_->tables;
    if (first.value != t.phaseCount() + 1) return false;
    for (size_t i = 0; i < phases.size(); ++i) {
        Phase p = phases[i];
        p.name = t.internString(names[i]);
        t.addPhase(p);
    }
    return true;
}
void BackgroundTraceWriter::endPhases(std::span<const std::pair<PhaseId, int64_t>> ends) {
    MEMSCOPE_LOCKED(impl_);
    for (const auto& [id, end] : ends) impl_->tables.endPhase(id, end);
}
void BackgroundTraceWriter::addAnnotation(const Annotation& annotation) {
    MEMSCOPE_LOCKED(impl_);
    impl_->tables.addAnnotation(annotation);
}
void BackgroundTraceWriter::addAttribute(uint64_t event, StringId key, StringId value) {
    MEMSCOPE_LOCKED(impl_);
    impl_->tables.addAttribute(event, key, value);
}
void BackgroundTraceWriter::setProperty(std::string key, std::string value) {
    MEMSCOPE_LOCKED(impl_);
    impl_->tables.setProperty(std::move(key), std::move(value));
}
void BackgroundTraceWriter::setAllocatorState(const AllocatorState& state) {
    MEMSCOPE_LOCKED(impl_);
    impl_->tables.setAllocatorState(state);
}
void BackgroundTraceWriter::setRunMetrics(const RunMetrics& metrics) {
    MEMSCOPE_LOCKED(impl_);
    impl_->tables.setRunMetrics(metrics);
}

#undef MEMSCOPE_LOCKED

uint64_t BackgroundTraceWriter::append(const Event& event) {
    Impl& d = *impl_;
    bool wake;
    uint64_t index;
    {
        std::lock_guard lock(d.sync->mutex);
        index = d.tables.nextEventIndex();
        if (d.closed || d.in_child) return index;  // nothing will write it
        d.events.push_back(d.tables.sanitize(event));
        wake = d.events.size() == d.per_chunk;
    }
    if (wake) d.sync->wake.notify_one();
    return index;
}

void BackgroundTraceWriter::append(std::span<const Event> events) {
    if (events.empty()) return;
    Impl& d = *impl_;
    bool wake;
    {
        std::lock_guard lock(d.sync->mutex);
        if (d.closed || d.in_child) return;
        // One copy and one pass, not a call and a push per event (a step's
        // batch from the trainer's ledger is a few thousand).
        const size_t before = d.events.size();
        d.events.insert(d.events.end(), events.begin(), events.end());
        d.tables.sanitize(std::span(d.events).subspan(before));
        d.tables.countEvents(events.size());
        wake = before < d.per_chunk && d.events.size() >= d.per_chunk;
    }
    if (wake) d.sync->wake.notify_one();
}

Result<void> BackgroundTraceWriter::flush() {
    Impl& d = *impl_;
    std::unique_lock lock(d.sync->mutex);
    if (d.in_child)
        return makeError(
            "this trace writer belongs to the parent process: a forked child writes "
            "nothing");
    if (d.closed) return d.result();
    const uint64_t target = ++d.flush_requested;
    d.sync->wake.notify_one();
    d.sync->flushed.wait(lock, [&] { return d.flush_done >= target || d.thread_done; });
    return d.result();
}

Result<void> BackgroundTraceWriter::close() {
    Impl& d = *impl_;
    {
        std::unique_lock lock(d.sync->mutex);
        if (d.in_child) {
            d.closed = true;
            return d.result();
        }
        if (d.closed) {
            // Another caller (a signal handler's thread, the destructor) is
            // closing: return only once the file is complete, as it will.
            d.sync->flushed.wait(lock, [&] { return d.thread_done; });
            return d.result();
        }
        d.closed = true;
        d.stop = true;
    }
    d.sync->wake.notify_one();
    d.sync->thread.join();
    std::lock_guard lock(d.sync->mutex);
    return d.result();
}

}  // namespace memscope
