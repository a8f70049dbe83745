#pragma once
// Writes protocol-4 pickles with the opcodes both CPython and memory_viz's own
// JavaScript unpickler read (no BINUNICODE8, no sets, no globals). Output goes
// out in FRAMEs of about 64 KiB, cut only between top-level items, as CPython
// requires; the memo is the caller's to use for sharing (frames, stacks, keys).

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "memscope/base/result.h"

namespace memscope::pickle {

class Writer {
public:
    explicit Writer(std::FILE* out);

    void begin();  // PROTO 4
    void end();    // STOP and the last frame

    void none();
    void boolean(bool v);
    void integer(int64_t v);
    void unsignedInteger(uint64_t v);
    void floating(double v);
    void string(std::string_view s);

    void emptyDict();
    void emptyList();
    void mark();
    void setItems();  // closes a MARK'ed batch of key, value pairs
    void appends();   // closes a MARK'ed batch of list items
    void tuple2();

    uint32_t memoize();  // the memo id of the object on top
    void get(uint32_t memo_id);

    // A good place to end a frame (between two complete items).
    void boundary() {
        if (buf_.size() >= kFrameTarget) flushFrame();
    }
    Result<void> status() const;

private:
    static constexpr size_t kFrameTarget = 64 * 1024;
    void op(uint8_t o) { buf_.push_back(char(o)); }
    void le(uint64_t v, int n);
    void flushFrame();

    std::FILE* out_;
    std::string buf_;
    uint32_t next_memo_ = 0;
    bool io_error_ = false;
};

// Writes a list (or dict) in batches of 1000 items like CPython, so that no
// MARK holds millions of values in a reader.
class Batcher {
public:
    Batcher(Writer& w, bool dict) : w_(w), dict_(dict) {}
    void item() {
        if (n_ % 1000 == 0) {
            if (n_) close();
            w_.mark();
        }
        ++n_;
    }
    void finish() {
        if (n_) close();
    }

private:
    void close() { dict_ ? w_.setItems() : w_.appends(); }
    Writer& w_;
    bool dict_;
    uint64_t n_ = 0;
};

}  // namespace memscope::pickle
