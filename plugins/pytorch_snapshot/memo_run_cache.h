#pragma once
// What a list built from one run of memo references was folded into, by the
// run's bytes. A snapshot's frames lists are such runs (MARK, BINGET...,
// APPENDS), 40 to 130 frames long, and only 1 to 5% of them are distinct in
// real files: the same bytes are the same memo indexes, so the same values
// while no memo slot is overwritten, and the handler folds them into the same
// stack. A hit replaces pushing, checking and interning every frame with one
// hash over the run's bytes.
//
// The cache stops growing at kMaxBytes of keys, and turns itself off when
// runs rarely repeat (a file written by another pickler), so that it costs a
// hash of 16 bytes per run at most.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "pickle_value.h"

namespace memscope::pickle {

class MemoRunCache {
public:
    // Runs are looked up by their first kPrefix bytes, so that a hit costs
    // no walk over the run's opcodes: the bytes that follow are compared with
    // each stored run of that prefix. Shorter runs are not cached.
    static constexpr size_t kPrefix = 16;
    static uint64_t hashPrefix(const uint8_t* run);

    struct Hit {
        const Value* replacement = nullptr;  // null: no stored run is here
        size_t length = 0;                   // the run's bytes
        uint64_t values = 0;                 // the memo references in it
    };
    // A stored run that the `available` bytes at `at` start with, followed by
    // `terminator`. Counts the lookup. Two stored runs cannot both match: each
    // is a sequence of opcodes, so where one ends the other goes on with an
    // opcode that is not the terminator.
    Hit find(const uint8_t* at, size_t available, uint64_t prefix_hash, uint8_t terminator);
    void insert(std::span<const uint8_t> run, uint64_t values, uint64_t prefix_hash,
                const Value& replacement);

    bool enabled() const { return enabled_; }
    // Forgets everything: a memo slot was overwritten, so equal bytes may no
    // longer mean equal values.
    void clear();

    size_t entries() const { return entries_; }

    static constexpr size_t kMaxBytes = 32u << 20;
    // After this many lookups, fewer than one hit in kMinHitShare turns it off.
    static constexpr uint64_t kTrialLookups = 1u << 16;
    static constexpr uint64_t kMinHitShare = 8;

private:
    struct Slot {
        uint64_t hash = 0;
        uint64_t offset = 0;  // into keys_
        uint32_t length = 0;  // 0 = empty
        uint32_t values = 0;
        Value replacement;
    };
    void grow();

    std::vector<Slot> slots_;
    std::vector<uint8_t> keys_;
    size_t entries_ = 0;
    uint64_t lookups_ = 0;
    uint64_t hits_ = 0;
    bool enabled_ = true;
};

}  // namespace memscope::pickle
