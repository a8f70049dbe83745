#pragma once
// The hostile corpus of issue 14: one generated file per case class (memory
// amplification, quadratic time, silently wrong figures, duplicates, pipes).
// Built by the hostile tests (small sizes) and by memscope-bench-hostile (the
// sizes the issue names), so both try the same shapes.

#include <cstdint>
#include <string>
#include <vector>

namespace memscope::hostile {

struct Case {
    std::string name;    // e.g. "pickle_memo_gaps"
    std::string klass;   // the class: amplification, quadratic, figures, ...
    std::string path;    // the file written
    std::string expect;  // what a fixed build gives: "error", "warning" or "figures"
};

// Writes every case under `folder` (created). `full`: the sizes of the issue
// (tens of MB of input, minutes on a broken build); else small sizes that keep
// each case well under a second.
std::vector<Case> writeCorpus(const std::string& folder, bool full);

// Builders used by the tests directly.
std::string pickleMemoGaps(int puts);
std::string pickleEmptyListPop(uint64_t pairs);
std::string pickleSharedBigString(int entries, size_t string_bytes, bool user_metadata);
std::string pickleFramesSharingStrings(int frames, size_t string_bytes);
std::string pickleManyKeys(int keys);
// One alloc/free pair per device list, with the given oddity on the first entry.
enum class EntryOddity { None, TimeFloat, TimeNaN, TimeMissing, AddrFloat, SizeHuge };
std::string pickleEntries(int entries, EntryOddity oddity);
std::string pickleDuplicateKeys();  // 'device_traces' and 'segments' twice: the last wins
std::string pickleSharedEntry();    // one entry dict in two device lists
// Two segments: the first holds a 1 MiB block and one of 2^63 bytes; the
// second has a 'total_size' of 2^63 and one block.
std::string pickleHugeSegments();
std::string kinetoJson(const std::string& first_event_ts, const std::string& first_bytes);
std::string kinetoDuplicateTraceEvents();
std::string kinetoDuplicateArgs();
std::string jsonManyKeys(int keys);
std::string gzip(const std::string& text);
// A gzip of `prefix`, then `repeat` bytes of `fill`, then `suffix`, streamed.
bool writeGzipFill(const std::string& path, const std::string& prefix, char fill, uint64_t repeat,
                   const std::string& suffix);
std::string timelineFreedOldestFirst(int allocations);
// A native trace of `events` events (a whole file, by the real writer).
bool writeNativeEvents(const std::string& path, uint64_t events, uint32_t per_chunk);
// A native file whose one events chunk (of `per_chunk` identical events) is
// repeated `copies` times: each chunk passes every per-chunk check.
bool writeNativeRepeatedEvents(const std::string& path, uint32_t per_chunk, int copies);
// A native file with `chunks` chunks of table type `type` (8 annotations, 9
// attributes, 1 metadata), each `raw_bytes` of zero items, zstd-compressed.
bool writeNativeTableBomb(const std::string& path, uint8_t type, uint32_t raw_bytes, int chunks);
// A native trace of two events with a digest chunk (written by hand, as no
// writer can: its device is an int16) whose device is `device`, its other
// figures zero.
bool writeNativeDigestOfDevice(const std::string& path, int64_t device);
// Issue 64, class 3: a native trace (by the real writer) of `modules`
// modules that all name one path string of `path_bytes` bytes, with a scope
// each and an allocation in each scope, so the peak is held by all of them.
bool writeNativeSharedModulePath(const std::string& path, int modules, size_t path_bytes);
// Issue 64, class 7: a native trace whose run name, module paths, recorded
// range and a property carry terminal control sequences (title, clear
// screen), a newline forging a line and bytes that are not UTF-8.
bool writeNativeHostileStrings(const std::string& path);
// The strings writeNativeHostileStrings puts in its run's name.
std::string hostileRunName();
bool writeFile(const std::string& path, const std::string& bytes);

}  // namespace memscope::hostile
