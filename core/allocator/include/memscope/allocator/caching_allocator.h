#pragma once
// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
// whose rules hold from 1.13 to 2.x): given requests and frees, where each
// block lands, which segments are made (cudaMalloc) or mapped (expandable
// segments), what is reserved, and which request would fail at a device
// capacity. It holds no trace; allocator_model_replay.h feeds it a trace's
// events.
//
// The rules modelled, with PyTorch's names:
// - sizes round up to 512 B (round_size), or to roundup_power2_divisions;
// - requests up to 1 MiB use the small pool, in 2 MiB segments; larger ones the
//   large pool, in 20 MiB segments below 10 MiB, else rounded up to 2 MiB
//   (get_allocation_size); pools are per stream;
// - the smallest free block of the stream's pool that fits is taken (ties by
//   address), except that a request below max_split_size never takes a block
//   of that size or more, and one above takes a block at most 20 MiB larger
//   (get_free_block);
// - a block is split when the rest is >= 512 B (small pool, or expandable
//   segments) or > 1 MiB (large pool, below max_split_size) (should_split);
// - a freed block merges with free neighbours of its segment (free_block);
// - when no block fits: garbage collection (under a capacity, with a
//   threshold), a new segment, and if that exceeds the capacity, freeing
//   oversize cached blocks (max_split_size), then all cached whole segments
//   (release_cached_blocks), then failing;
// - expandable segments map 2 MiB (small) or 20 MiB (large) pages into one
//   growing virtual range per stream and pool, and unmap free pages on release.
// Not modelled: CUDA-graph private pools, events that keep a freed block busy
// (record_stream), and free-memory callbacks.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <vector>

#include "memscope/allocator/allocator_settings.h"

namespace memscope {

struct ModelSegmentEvent {
    // SegmentAlloc, SegmentFree, SegmentMap or SegmentUnmap, as a trace records them.
    EventKind kind = EventKind::SegmentAlloc;
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
};

// A live block at the start (a warm cache), by address inside its segment.
struct SeedBlock {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t tag = 0;  // the caller's, given back by forEachSegment
};

// A segment as the model holds it, for views: mapped ranges only.
struct ModelBlockView {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t tag = 0;
};
struct ModelSegmentView {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
    bool expandable = false;
    bool small = false;
    std::vector<ModelBlockView> blocks;  // allocated ones, by address
};

class CachingAllocatorModel {
public:
    using BlockId = uint32_t;

    // `capacity`: the bytes the allocator may reserve (the device's memory
    // free to this process, or a set_per_process_memory_fraction); none =
    // unlimited, and nothing fails.
    explicit CachingAllocatorModel(AllocatorSettings settings,
                                   std::optional<uint64_t> capacity = std::nullopt);

    // Segments live before the first request (a warm cache) and their live
    // blocks; the rest of each segment is free. Segments must not overlap
    // each other; blocks outside their segment are dropped. Returns the id of
    // each seed block that was kept (nullopt for one dropped), in order.
    std::vector<std::optional<BlockId>> seedSegment(uint64_t address, uint64_t size,
                                                    uint64_t stream, bool expandable, bool small,
                                                    std::span<const SeedBlock> live);

    // A request of `size` bytes on `stream`; nullopt when it fails at the
    // capacity (after every retry the allocator makes). Size 0 is served by
    // PyTorch without a block: callers skip it.
    std::optional<BlockId> allocate(uint64_t size, uint64_t stream, uint64_t tag = 0);
    void free(BlockId id);
    // torch.cuda.empty_cache(): every cached whole segment freed, every free
    // page of an expandable segment unmapped.
    void emptyCache();

    uint64_t reservedBytes() const { return reserved_; }
    uint64_t allocatedBytes() const { return allocated_; }  // blocks handed out, rounded
    uint64_t largestFreeBlock() const;  // mapped and cached; O(streams × log blocks)
    uint64_t blockSize(BlockId id) const;
    uint64_t blockAddress(BlockId id) const;
    bool failedLast() const { return failed_last_; }

    uint64_t segmentAllocs() const { return counts_.allocs; }
    uint64_t segmentFrees() const { return counts_.frees; }
    uint64_t segmentMaps() const { return counts_.maps; }
    uint64_t segmentUnmaps() const { return counts_.unmaps; }

    // Counts from here on (after seeding a fresh cache).
    void resetCounters() { counts_ = {}; }

    // Called for every segment event the model makes, in order.
    void setSegmentListener(std::function<void(const ModelSegmentEvent&)> listener) {
        listener_ = std::move(listener);
    }

    // The live segments (mapped ranges of expandable ones) by address, with
    // their allocated blocks. O(blocks).
    std::vector<ModelSegmentView> segments() const;

    const AllocatorSettings& settings() const { return settings_; }

private:
    static constexpr uint32_t kNone = UINT32_MAX;
    struct Block {
        uint64_t address = 0;
        uint64_t size = 0;
        uint64_t stream = 0;
        uint64_t tag = 0;
        uint64_t gc_base = 0;  // the pool's search count when it became free
        uint32_t segment = kNone;
        uint32_t prev = kNone;
        uint32_t next = kNone;
        bool allocated = false;
        bool mapped = true;
        bool small = false;
        bool in_use = false;  // the id is taken (not on the free list of ids)
    };
    struct Segment {
        uint64_t address = 0;
        uint64_t size = 0;  // virtual size for an expandable segment
        uint64_t stream = 0;
        uint32_t first = kNone;  // its lowest block
        bool expandable = false;
        bool small = false;
        bool alive = false;
    };
    using SizeKey = std::tuple<uint64_t, uint64_t, uint64_t, uint32_t>;  // stream, size, addr, id
    using AddrKey = std::tuple<uint64_t, uint64_t, uint32_t>;            // stream, addr, id
    struct Pool {
        std::set<SizeKey> free;      // mapped free blocks
        std::set<AddrKey> unmapped;  // unmapped ranges of expandable segments
        uint64_t searches = 0;       // get_free_block calls (garbage collection's clock)
    };

    BlockId newBlock(const Block& b);
    void dropBlock(BlockId id);
    Pool& poolOf(const Block& b) { return pools_[b.small ? 0 : 1]; }
    void insertFree(BlockId id);
    void eraseFree(BlockId id);
    void insertUnmapped(BlockId id);
    void eraseUnmapped(BlockId id);
    void tryMerge(BlockId dst, BlockId src);
    std::optional<BlockId> getFreeBlock(uint64_t rounded, uint64_t stream, bool small);
    std::optional<BlockId> allocBlock(uint64_t rounded, uint64_t stream, bool small);
    // A new segment at the next free address, one block covering it (unmapped
    // for an expandable one); the caller counts what it reserves.
    BlockId newSegment(uint64_t size, uint64_t stream, bool small, bool expandable);
    std::optional<BlockId> allocExpandable(uint64_t rounded, uint64_t stream, bool small);
    bool mapBlock(BlockId id, uint64_t size);
    void unmapBlock(BlockId id);
    bool releaseAvailable(uint64_t rounded, uint64_t stream, bool small);
    void releaseSegmentOf(BlockId id);
    void garbageCollect();
    bool fits(uint64_t more) const { return !capacity_ || reserved_ + more <= *capacity_; }
    void recordSegmentEvent(EventKind kind, uint64_t address, uint64_t size, uint64_t stream);

    AllocatorSettings settings_;
    std::optional<uint64_t> capacity_;
    std::vector<Block> blocks_;
    std::vector<BlockId> free_ids_;
    std::vector<Segment> segments_;
    Pool pools_[2];
    uint64_t reserved_ = 0;
    uint64_t allocated_ = 0;
    uint64_t next_address_ = 0;  // where the next new segment goes
    struct SegmentCounts {
        uint64_t allocs = 0, frees = 0, maps = 0, unmaps = 0;
    } counts_;
    bool failed_last_ = false;
    std::function<void(const ModelSegmentEvent&)> listener_;
};

}  // namespace memscope
