#pragma once
// Byte sources for the JSON importers: a file, memory, or gzip inflated on the
// fly (zlib, streaming: a 1 GB .json.gz is read in 256 KiB pieces), wrapped as
// a RapidJSON input stream so its SAX reader never sees the whole document.

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/open/plugin.h"

namespace memscope::json_input {

class Source {
public:
    virtual ~Source() = default;
    // Up to cap bytes into buf; 0 at the end or on error (see error()).
    virtual size_t read(char* buf, size_t cap) = 0;
    virtual uint64_t consumed() const = 0;  // raw (compressed) bytes read so far
    virtual uint64_t total() const = 0;     // raw size, for progress
    const std::string& error() const { return error_; }

protected:
    std::string error_;
};

// Opens a file; gzip (by its magic bytes) is inflated transparently.
Result<std::unique_ptr<Source>> openFile(const std::string& path);
// Same for bytes in memory (fuzzing, tests); the bytes must outlive the source.
std::unique_ptr<Source> openMemory(std::span<const std::byte> bytes);

// The first bytes of the JSON text, inflating a gzip head if need be (probes).
std::string headText(std::span<const std::byte> head, size_t max = 2048);

// RapidJSON's input stream concept over a Source.
class Stream {
public:
    using Ch = char;
    explicit Stream(Source& source, const TaskContext* ctx = nullptr)
        : source_(source), ctx_(ctx), buf_(256 * 1024) {
        refill();
    }
    // The handler calls mark() at every value it is given. A run of text with
    // no value in it longer than kMaxRun (a giant string, key, number or
    // whitespace) stops the parse: RapidJSON would hold a whole string in
    // memory before handing it over, whether the importer uses it or not.
    void mark() { run_start_ = offset_ + pos_; }
    bool cancelled() const { return cancelled_; }
    const std::string& error() const { return error_; }
    static constexpr uint64_t kMaxRun = 64ull << 20;
    Ch Peek() const { return pos_ < end_ ? buf_[pos_] : '\0'; }
    Ch Take() {
        if (pos_ >= end_) return '\0';
        const Ch c = buf_[pos_++];
        if (pos_ == end_) refill();
        return c;
    }
    size_t Tell() const { return size_t(offset_ + pos_); }
    // Output half of the concept: unused (we never parse in place).
    Ch* PutBegin() { return nullptr; }
    void Put(Ch) {}
    void Flush() {}
    size_t PutEnd(Ch*) { return 0; }

private:
    // Every 256 KiB: cancel and the run limit are checked here, so both take
    // effect within a millisecond whatever the text is.
    void refill() {
        offset_ += end_;
        pos_ = 0;
        end_ = 0;
        if (ctx_ && ctx_->cancelled()) {
            cancelled_ = true;
            return;
        }
        if (offset_ - run_start_ > kMaxRun) {
            if (error_.empty())
                error_ = "no JSON value ends within " + std::to_string(kMaxRun >> 20) +
                         " MiB at byte " + std::to_string(run_start_) +
                         " of the uncompressed text (a string, key or blank run this long is "
                         "not a trace memscope reads)";
            return;
        }
        end_ = source_.read(buf_.data(), buf_.size());
    }
    Source& source_;
    const TaskContext* ctx_;
    uint64_t run_start_ = 0;
    bool cancelled_ = false;
    std::string error_;
    std::vector<char> buf_;
    size_t pos_ = 0, end_ = 0;
    uint64_t offset_ = 0;
};

// Reports progress by raw bytes every 16 MiB of a Source and polls the cancel
// flag then; the SAX handlers of both JSON importers call tick() per element.
class ProgressGate {
public:
    ProgressGate(const TaskContext& ctx, const Source& source) : ctx_(ctx), source_(source) {}
    // False once the user cancelled: the handler stops the parse.
    bool tick() {
        const uint64_t at = source_.consumed();
        if (at >= next_report_) {
            next_report_ = at + kReportEvery;
            if (ctx_.cancelled()) {
                cancelled_ = true;
                return false;
            }
            ctx_.report(at, source_.total());
        }
        return true;
    }
    bool cancelled() const { return cancelled_; }

private:
    static constexpr uint64_t kReportEvery = 16ull << 20;
    const TaskContext& ctx_;
    const Source& source_;
    uint64_t next_report_ = kReportEvery;
    bool cancelled_ = false;
};

// "1669783687464300.125" (µs, as chrome traces write ts) -> ns, exactly.
bool microsToNanos(const char* s, size_t n, int64_t& out);
bool parseInt(const char* s, size_t n, int64_t& out);
bool parseUInt(const char* s, size_t n, uint64_t& out);
bool parseDouble(const char* s, size_t n, double& out);

}  // namespace memscope::json_input
