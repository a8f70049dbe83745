#include "memscope/allocator/caching_allocator.h"

#include <algorithm>
#include <iterator>

namespace memscope {

namespace {

// PyTorch's constants (CUDACachingAllocator.cpp).
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kMinBlockSize = 512;         // every block is a multiple of this
constexpr uint64_t kSmallSize = 1 * kMiB;       // largest request of the small pool
constexpr uint64_t kSmallBuffer = 2 * kMiB;     // small pool's segments (and pages)
constexpr uint64_t kLargeBuffer = 20 * kMiB;    // large pool's small segments (and pages)
constexpr uint64_t kMinLargeAlloc = 10 * kMiB;  // from here, segments are rounded
constexpr uint64_t kRoundLarge = 2 * kMiB;
// An expandable segment reserves this much address space when no capacity is
// known (PyTorch reserves the device's memory and an eighth).
constexpr uint64_t kUnlimitedVirtual = uint64_t(1) << 44;
// New segments go above every address a real trace uses.
constexpr uint64_t kFirstModelAddress = uint64_t(1) << 47;

uint64_t roundUp(uint64_t v, uint64_t m) {
    const uint64_t r = v % m;
    if (r == 0) return v;
    return v > UINT64_MAX - (m - r) ? UINT64_MAX / m * m : v + (m - r);
}

}  // namespace

CachingAllocatorModel::CachingAllocatorModel(AllocatorSettings settings,
                                             std::optional<uint64_t> capacity)
    : settings_(settings), capacity_(capacity), next_address_(kFirstModelAddress) {}

CachingAllocatorModel::BlockId CachingAllocatorModel::newBlock(const Block& b) {
    BlockId id;
    if (!free_ids_.empty()) {
        id = free_ids_.back();
        free_ids_.pop_back();
        blocks_[id] = b;
    } else {
        id = BlockId(blocks_.size());
        blocks_.push_back(b);
    }
    blocks_[id].in_use = true;
    return id;
}

void CachingAllocatorModel::dropBlock(BlockId id) {
    blocks_[id].in_use = false;
    free_ids_.push_back(id);
}

void CachingAllocatorModel::insertFree(BlockId id) {
    Block& b = blocks_[id];
    Pool& pool = poolOf(b);
    b.gc_base = pool.searches;
    pool.free.emplace(b.stream, b.size, b.address, id);
}

void CachingAllocatorModel::eraseFree(BlockId id) {
    const Block& b = blocks_[id];
    poolOf(b).free.erase(SizeKey{b.stream, b.size, b.address, id});
}

void CachingAllocatorModel::insertUnmapped(BlockId id) {
    const Block& b = blocks_[id];
    poolOf(b).unmapped.emplace(b.stream, b.address, id);
}

void CachingAllocatorModel::eraseUnmapped(BlockId id) {
    const Block& b = blocks_[id];
    poolOf(b).unmapped.erase(AddrKey{b.stream, b.address, id});
}

void CachingAllocatorModel::tryMerge(BlockId dst, BlockId src) {
    if (src == kNone) return;
    if (blocks_[src].allocated || blocks_[src].mapped != blocks_[dst].mapped) return;
    if (blocks_[src].mapped)
        eraseFree(src);
    else
        eraseUnmapped(src);
    Block& d = blocks_[dst];
    const Block s = blocks_[src];
    if (d.prev == src) {
        d.address = s.address;
        d.prev = s.prev;
        if (s.prev != kNone)
            blocks_[s.prev].next = dst;
        else
            segments_[d.segment].first = dst;
    } else {
        d.next = s.next;
        if (s.next != kNone) blocks_[s.next].prev = dst;
    }
    d.size += s.size;
    dropBlock(src);
}

void CachingAllocatorModel::recordSegmentEvent(EventKind kind, uint64_t address, uint64_t size,
                                               uint64_t stream) {
    switch (kind) {
        case EventKind::SegmentAlloc:
            ++counts_.allocs;
            break;
        case EventKind::SegmentFree:
            ++counts_.frees;
            break;
        case EventKind::SegmentMap:
            ++counts_.maps;
            break;
        case EventKind::SegmentUnmap:
            ++counts_.unmaps;
            break;
        default:
            break;
    }
    if (listener_) listener_(ModelSegmentEvent{kind, address, size, stream});
}

std::vector<std::optional<CachingAllocatorModel::BlockId>> CachingAllocatorModel::seedSegment(
    uint64_t address, uint64_t size, uint64_t stream, bool expandable, bool small,
    std::span<const SeedBlock> live) {
    std::vector<std::optional<BlockId>> ids(live.size());
    size = size / kMinBlockSize * kMinBlockSize;
    if (size == 0 || address > UINT64_MAX - size) return ids;
    const uint64_t end = address + size;
    const uint32_t seg_id = uint32_t(segments_.size());
    segments_.push_back(Segment{address, size, stream, kNone, expandable, small, true});
    reserved_ += size;
    next_address_ = std::max(next_address_, roundUp(end, kSmallBuffer));

    std::vector<size_t> order(live.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return live[a].address < live[b].address; });
    BlockId last = kNone;
    auto append = [&](uint64_t at, uint64_t bytes, bool allocated, uint64_t tag) {
        Block b;
        b.address = at;
        b.size = bytes;
        b.stream = stream;
        b.tag = tag;
        b.segment = seg_id;
        b.prev = last;
        b.allocated = allocated;
        b.small = small;
        const BlockId id = newBlock(b);
        if (last != kNone)
            blocks_[last].next = id;
        else
            segments_[seg_id].first = id;
        last = id;
        if (allocated)
            allocated_ += bytes;
        else
            insertFree(id);
        return id;
    };
    uint64_t cursor = address;
    for (size_t i : order) {
        const SeedBlock& s = live[i];
        if (s.size == 0 || s.address < cursor || s.address > end || s.size > end - s.address)
            continue;  // overlapping or outside: what the end state cannot mean
        if (s.address > cursor) append(cursor, s.address - cursor, false, 0);
        ids[i] = append(s.address, s.size, true, s.tag);
        cursor = s.address + s.size;
    }
    if (cursor < end) append(cursor, end - cursor, false, 0);
    return ids;
}

std::optional<CachingAllocatorModel::BlockId> CachingAllocatorModel::getFreeBlock(uint64_t rounded,
                                                                                  uint64_t stream,
                                                                                  bool small) {
    Pool& pool = pools_[small ? 0 : 1];
    ++pool.searches;
    auto it = pool.free.lower_bound(SizeKey{stream, rounded, 0, 0});
    if (it == pool.free.end() || std::get<0>(*it) != stream) return std::nullopt;
    const uint64_t size = std::get<1>(*it);
    const uint64_t max_split = settings_.max_split_size;
    // Oversize blocks serve only oversize requests, and those only from a
    // block at most a large buffer bigger (they are never split).
    if (rounded < max_split && size >= max_split) return std::nullopt;
    if (rounded >= max_split && size >= rounded + kLargeBuffer) return std::nullopt;
    const BlockId id = std::get<3>(*it);
    eraseFree(id);
    return id;
}

std::optional<CachingAllocatorModel::BlockId> CachingAllocatorModel::allocBlock(uint64_t rounded,
                                                                                uint64_t stream,
                                                                                bool small) {
    if (settings_.expandable_segments) return allocExpandable(rounded, stream, small);
    const uint64_t size = small                      ? kSmallBuffer
                          : rounded < kMinLargeAlloc ? kLargeBuffer
                                                     : roundUp(rounded, kRoundLarge);
    if (!fits(size) || next_address_ > UINT64_MAX - size) return std::nullopt;
    const BlockId id = newSegment(size, stream, small, false);
    reserved_ += size;
    recordSegmentEvent(EventKind::SegmentAlloc, blocks_[id].address, size, stream);
    return id;
}

CachingAllocatorModel::BlockId CachingAllocatorModel::newSegment(uint64_t size, uint64_t stream,
                                                                 bool small, bool expandable) {
    const uint32_t seg_id = uint32_t(segments_.size());
    segments_.push_back(Segment{next_address_, size, stream, kNone, expandable, small, true});
    Block b;
    b.address = next_address_;
    b.size = size;
    b.stream = stream;
    b.segment = seg_id;
    b.small = small;
    b.mapped = !expandable;  // an expandable segment starts as address space only
    const BlockId id = newBlock(b);
    segments_[seg_id].first = id;
    next_address_ = roundUp(next_address_ + size, kSmallBuffer);
    return id;
}

bool CachingAllocatorModel::mapBlock(BlockId id, uint64_t size) {
    const Segment& seg = segments_[blocks_[id].segment];
    const uint64_t page = seg.small ? kSmallBuffer : kLargeBuffer;
    const uint64_t map = std::min(roundUp(size, page), blocks_[id].size);
    if (map == 0 || !fits(map)) return false;
    eraseUnmapped(id);
    if (blocks_[id].size > map) {
        Block rest = blocks_[id];
        rest.address += map;
        rest.size -= map;
        rest.prev = id;
        const BlockId r = newBlock(rest);
        if (blocks_[r].next != kNone) blocks_[blocks_[r].next].prev = r;
        blocks_[id].next = r;
        insertUnmapped(r);
    }
    blocks_[id].size = map;
    blocks_[id].mapped = true;
    reserved_ += map;
    recordSegmentEvent(EventKind::SegmentMap, blocks_[id].address, map, blocks_[id].stream);
    tryMerge(id, blocks_[id].prev);
    tryMerge(id, blocks_[id].next);
    insertFree(id);
    return true;
}

std::optional<CachingAllocatorModel::BlockId> CachingAllocatorModel::allocExpandable(
    uint64_t rounded, uint64_t stream, bool small) {
    Pool& pool = pools_[small ? 0 : 1];
    auto allocatable = [&](BlockId id) { return id != kNone && !blocks_[id].allocated; };
    auto hasRoom = [&](BlockId c) {
        uint64_t bytes = 0;
        while (bytes < rounded && allocatable(c)) {
            bytes += blocks_[c].size;
            c = blocks_[c].next;
        }
        return bytes >= rounded;
    };
    BlockId candidate = kNone;
    for (auto it = pool.unmapped.lower_bound(AddrKey{stream, 0, 0});
         it != pool.unmapped.end() && std::get<0>(*it) == stream; ++it) {
        BlockId c = std::get<2>(*it);
        // A free mapped block just before the unmapped range is used first.
        if (allocatable(blocks_[c].prev)) c = blocks_[c].prev;
        if (hasRoom(c)) {
            candidate = c;
            break;
        }
    }
    if (candidate == kNone) {
        const uint64_t page = small ? kSmallBuffer : kLargeBuffer;
        const uint64_t virt =
            capacity_ ? roundUp(*capacity_ + *capacity_ / 8, page) : kUnlimitedVirtual;
        if (virt < rounded || next_address_ > UINT64_MAX - virt) return std::nullopt;
        candidate = newSegment(virt, stream, small, true);
        insertUnmapped(candidate);
    }
    if (!blocks_[candidate].mapped) {
        if (!mapBlock(candidate, std::min(blocks_[candidate].size, rounded))) return std::nullopt;
    }
    while (blocks_[candidate].size < rounded) {
        const BlockId next = blocks_[candidate].next;
        if (next == kNone || blocks_[next].allocated) return std::nullopt;
        const uint64_t missing = rounded - blocks_[candidate].size;
        if (blocks_[next].mapped) return std::nullopt;  // would have merged
        if (!mapBlock(next, std::min(missing, blocks_[next].size))) return std::nullopt;
        candidate = next;  // it absorbed the free block before it
    }
    eraseFree(candidate);
    return candidate;
}

void CachingAllocatorModel::releaseSegmentOf(BlockId id) {
    const Block b = blocks_[id];
    eraseFree(id);
    Segment& seg = segments_[b.segment];
    seg.alive = false;
    seg.first = kNone;
    reserved_ -= std::min(reserved_, b.size);
    recordSegmentEvent(EventKind::SegmentFree, b.address, b.size, b.stream);
    dropBlock(id);
}

void CachingAllocatorModel::unmapBlock(BlockId id) {
    const uint32_t seg_id = blocks_[id].segment;
    const Segment seg = segments_[seg_id];
    const uint64_t page = seg.small ? kSmallBuffer : kLargeBuffer;
    const Block b = blocks_[id];
    const uint64_t begin = seg.address + roundUp(b.address - seg.address, page);
    const uint64_t end = seg.address + (b.address + b.size - seg.address) / page * page;
    if (begin >= end) return;
    eraseFree(id);
    if (begin > b.address) {
        Block before = b;
        before.size = begin - b.address;
        before.next = id;
        const BlockId nb = newBlock(before);
        if (b.prev != kNone)
            blocks_[b.prev].next = nb;
        else
            segments_[seg_id].first = nb;
        blocks_[id].prev = nb;
        insertFree(nb);
    }
    if (end < b.address + b.size) {
        Block after = b;
        after.address = end;
        after.size = b.address + b.size - end;
        after.prev = id;
        const BlockId na = newBlock(after);
        if (b.next != kNone) blocks_[b.next].prev = na;
        blocks_[id].next = na;
        insertFree(na);
    }
    blocks_[id].address = begin;
    blocks_[id].size = end - begin;
    blocks_[id].mapped = false;
    reserved_ -= std::min(reserved_, end - begin);
    recordSegmentEvent(EventKind::SegmentUnmap, begin, end - begin, b.stream);
    tryMerge(id, blocks_[id].prev);
    tryMerge(id, blocks_[id].next);
    insertUnmapped(id);
}

void CachingAllocatorModel::emptyCache() {
    for (Pool& pool : pools_) {
        std::vector<BlockId> ids;
        ids.reserve(pool.free.size());
        for (const SizeKey& k : pool.free) ids.push_back(std::get<3>(k));
        std::vector<BlockId> to_unmap;
        for (BlockId id : ids) {
            const Block& b = blocks_[id];
            if (segments_[b.segment].expandable)
                to_unmap.push_back(id);
            else if (b.prev == kNone && b.next == kNone)
                releaseSegmentOf(id);
        }
        for (BlockId id : to_unmap)
            if (blocks_[id].in_use && blocks_[id].mapped && !blocks_[id].allocated) unmapBlock(id);
    }
}

bool CachingAllocatorModel::releaseAvailable(uint64_t rounded, uint64_t stream, bool small) {
    const uint64_t max_split = settings_.max_split_size;
    if (max_split == AllocatorSettings::kNoMaxSplit) return false;
    Pool& pool = pools_[small ? 0 : 1];
    const uint64_t want = std::max(rounded, max_split);
    auto whole = [&](BlockId id) {
        const Block& b = blocks_[id];
        return !segments_[b.segment].expandable && b.prev == kNone && b.next == kNone;
    };
    auto it = pool.free.lower_bound(SizeKey{stream, want, 0, 0});
    if (it != pool.free.end() && std::get<0>(*it) == stream) {
        const BlockId id = std::get<3>(*it);
        if (!whole(id)) return false;
        releaseSegmentOf(id);
        return true;
    }
    // No one block is large enough: free oversize blocks, largest first.
    if (it == pool.free.begin()) return false;
    --it;
    uint64_t released = 0;
    while (released < want && std::get<1>(*it) >= max_split && std::get<0>(*it) == stream) {
        const auto cur = it;
        const bool first = cur == pool.free.begin();
        if (!first) --it;
        const BlockId id = std::get<3>(*cur);
        if (whole(id)) {
            released += blocks_[id].size;
            releaseSegmentOf(id);
        }
        if (first) break;
    }
    return released >= want;
}

void CachingAllocatorModel::garbageCollect() {
    if (!capacity_ || settings_.garbage_collection_threshold <= 0) return;
    const auto threshold = uint64_t(settings_.garbage_collection_threshold * double(*capacity_));
    if (reserved_ <= threshold) return;
    const uint64_t target = reserved_ - threshold;
    Pool& large = pools_[1];
    auto freeable = [&](BlockId id) {
        const Block& b = blocks_[id];
        return !segments_[b.segment].expandable && b.prev == kNone && b.next == kNone;
    };
    uint64_t total_age = 0, count = 0;
    for (const SizeKey& k : large.free)
        if (freeable(std::get<3>(k))) {
            total_age += large.searches - blocks_[std::get<3>(k)].gc_base;
            ++count;
        }
    uint64_t reclaimed = 0;
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        const double age_threshold = double(total_age) / double(count);
        freed = false;
        std::vector<BlockId> ids;
        for (const SizeKey& k : large.free) ids.push_back(std::get<3>(k));
        for (BlockId id : ids) {
            if (!freeable(id)) continue;
            const uint64_t age = large.searches - blocks_[id].gc_base;
            if (double(age) < age_threshold) continue;
            freed = true;
            reclaimed += blocks_[id].size;
            total_age -= age;
            --count;
            releaseSegmentOf(id);
        }
    }
}

std::optional<CachingAllocatorModel::BlockId> CachingAllocatorModel::allocate(uint64_t size,
                                                                              uint64_t stream,
                                                                              uint64_t tag) {
    failed_last_ = false;
    const uint64_t rounded = roundAllocationSize(settings_, size);
    const bool small = rounded <= kSmallSize;
    std::optional<BlockId> id = getFreeBlock(rounded, stream, small);
    if (!id) {
        garbageCollect();
        id = allocBlock(rounded, stream, small);
        if (!id && releaseAvailable(rounded, stream, small))
            id = allocBlock(rounded, stream, small);
        if (!id) {
            emptyCache();
            id = allocBlock(rounded, stream, small);
        }
        if (!id) {
            failed_last_ = true;
            return std::nullopt;
        }
    }
    const uint64_t remaining = blocks_[*id].size - rounded;
    const bool split = blocks_[*id].small || settings_.expandable_segments
                           ? remaining >= kMinBlockSize
                           : rounded < settings_.max_split_size && remaining > kSmallSize;
    if (split) {
        Block rest = blocks_[*id];
        rest.address += rounded;
        rest.size = remaining;
        rest.prev = *id;
        rest.allocated = false;
        const BlockId r = newBlock(rest);
        if (blocks_[r].next != kNone) blocks_[blocks_[r].next].prev = r;
        blocks_[*id].next = r;
        blocks_[*id].size = rounded;
        insertFree(r);
    }
    Block& b = blocks_[*id];
    b.allocated = true;
    b.tag = tag;
    allocated_ += b.size;
    return id;
}

void CachingAllocatorModel::free(BlockId id) {
    if (id >= blocks_.size() || !blocks_[id].in_use || !blocks_[id].allocated) return;
    blocks_[id].allocated = false;
    blocks_[id].tag = 0;
    allocated_ -= std::min(allocated_, blocks_[id].size);
    tryMerge(id, blocks_[id].prev);
    tryMerge(id, blocks_[id].next);
    insertFree(id);
}

uint64_t CachingAllocatorModel::largestFreeBlock() const {
    // The free sets are ordered by stream, then size: each stream's largest
    // block is the last before the next stream's. O(streams × log blocks),
    // asked at reserved peaks only, so no second index is kept per block.
    uint64_t largest = 0;
    for (const Pool& pool : pools_) {
        for (auto it = pool.free.begin(); it != pool.free.end();) {
            const uint64_t stream = std::get<0>(*it);
            auto next = stream == UINT64_MAX ? pool.free.end()
                                             : pool.free.lower_bound(SizeKey{stream + 1, 0, 0, 0});
            largest = std::max(largest, std::get<1>(*std::prev(next)));
            it = next;
        }
    }
    return largest;
}

uint64_t CachingAllocatorModel::blockSize(BlockId id) const {
    return id < blocks_.size() && blocks_[id].in_use ? blocks_[id].size : 0;
}

uint64_t CachingAllocatorModel::blockAddress(BlockId id) const {
    return id < blocks_.size() && blocks_[id].in_use ? blocks_[id].address : 0;
}

std::vector<ModelSegmentView> CachingAllocatorModel::segments() const {
    std::vector<ModelSegmentView> out;
    for (const Segment& seg : segments_) {
        if (!seg.alive) continue;
        ModelSegmentView view;
        bool open = false;
        for (uint32_t id = seg.first; id != kNone; id = blocks_[id].next) {
            const Block& b = blocks_[id];
            if (!b.mapped) {
                if (open) out.push_back(std::move(view));
                view = {};
                open = false;
                continue;
            }
            if (!open) {
                view = ModelSegmentView{b.address, 0, seg.stream, seg.expandable, seg.small, {}};
                open = true;
            }
            view.size += b.size;
            if (b.allocated) view.blocks.push_back(ModelBlockView{b.address, b.size, b.tag});
        }
        if (open) out.push_back(std::move(view));
    }
    std::sort(out.begin(), out.end(), [](const ModelSegmentView& a, const ModelSegmentView& b) {
        return a.address < b.address;
    });
    return out;
}

}  // namespace memscope
