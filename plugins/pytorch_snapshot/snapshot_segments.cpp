// The allocator's state: the segments' dicts, with their blocks, become
// Segments and Blocks as they are appended, and join the trace at the end.
#include "pickle_json.h"
#include "snapshot_mapper.h"

namespace memscope::pytorch_snapshot {

using pickle::Container;
using pickle::Kind;
using pickle::Machine;
using pickle::Tag;
using pickle::Value;

namespace {

BlockState stateOf(std::string_view s) {
    if (s == "active_allocated") return BlockState::ActiveAllocated;
    if (s == "active_pending_free") return BlockState::ActivePendingFree;
    return BlockState::Inactive;
}

}  // namespace

bool SnapshotMapper::convertSegment(Machine& m, uint32_t list, uint32_t dict) {
    const uint32_t sink = sinkFor(m, list, kSegmentSink);
    if (sink == UINT32_MAX) return false;
    SegmentSink& out = segment_sinks_[sink];
    Container& d = m.at(dict);
    Segment s;
    Value frames, blocks;
    const uint64_t segment_index = segments_seen_++;
    bool huge_total = false;
    for (size_t i = 0; i + 1 < d.items.size(); i += 2) {
        if (d.items[i].tag != Tag::Str) continue;
        const std::string_view key = m.str(d.items[i]);
        const Value& v = d.items[i + 1];
        if (key == "device") {
            if (!v.isInt() || v.asI64() < -1 || v.asI64() > INT16_MAX)
                return m.fail("a segment's 'device' is out of range");
            s.device = int16_t(v.asI64());
        } else if (key == "address") {
            if (v.isInt()) s.address = v.asU64();
        } else if (key == "total_size") {
            if (v.tag == Tag::UInt) {
                huge_total = true;
                continue;
            }
            if (!v.isInt() || v.isNegative())
                return m.fail("a segment's 'total_size' is not a non-negative integer");
            s.total_size = v.asU64();
        } else if (key == "stream") {
            if (v.isInt()) s.stream = v.asU64();
        } else if (key == "segment_type") {
            if (v.tag == Tag::Str) s.large = m.str(v) != "small";
        } else if (key == "segment_pool_id") {
            if (Container* t = m.deref(v);
                t && t->items.size() == 2 && t->items[0].isInt() && t->items[1].isInt()) {
                s.pool_id_first = t->items[0].asU64();
                s.pool_id_second = t->items[1].asU64();
            }
        } else if (key == "is_expandable") {
            s.expandable = v.isInt() && v.bits != 0;
        } else if (key == "frames") {
            frames = v;
        } else if (key == "blocks") {
            blocks = v;
        }
    }
    if (huge_total) {
        // Its blocks lie in a range no address can hold: they go with it.
        if (huge_segment_.count++ == 0)
            huge_segment_.first = "segment " + std::to_string(segment_index);
        releaseTree(m, Value{Tag::Ref, m.at(dict).generation, dict}, 4, false);
        return true;
    }
    s.stack = stackOf(m, frames);
    s.first_block = uint32_t(out.blocks.size());
    if (Container* bl = m.deref(blocks); bl && bl->kind != Kind::Dict) {
        uint64_t next = s.address;  // legacy blocks have no address: they tile the segment
        for (size_t bi = 0; bi < bl->items.size(); ++bi) {
            Container* b = m.deref(bl->items[bi]);
            if (!b || b->kind != Kind::Dict) continue;
            Block blk;
            bool has_address = false, has_requested = false, huge = false;
            Value bframes, history;
            for (size_t i = 0; i + 1 < b->items.size(); i += 2) {
                if (b->items[i].tag != Tag::Str) continue;
                const std::string_view key = m.str(b->items[i]);
                const Value& v = b->items[i + 1];
                if (key == "address" && v.isInt()) {
                    blk.address = v.asU64();
                    has_address = true;
                } else if ((key == "size" || key == "requested_size") && v.tag == Tag::UInt) {
                    huge = true;
                } else if (key == "size" && v.isInt() && !v.isNegative()) {
                    blk.size = v.asU64();
                } else if (key == "requested_size" && v.isInt() && !v.isNegative()) {
                    blk.requested_size = v.asU64();
                    has_requested = true;
                } else if (key == "state" && v.tag == Tag::Str) {
                    blk.state = stateOf(m.str(v));
                } else if (key == "frames") {
                    bframes = v;
                } else if (key == "history") {
                    history = v;
                }
            }
            if (huge) {
                if (huge_block_.count++ == 0)
                    huge_block_.first = "segment " + std::to_string(segment_index) + ", block " +
                                        std::to_string(bi);
                continue;
            }
            if (!has_address) blk.address = next;
            next = blk.address + blk.size;
            if (bframes.tag != Tag::None) {
                blk.stack = stackOf(m, bframes);
            } else if (Container* h = m.deref(history); h && !h->items.empty()) {
                // memory_viz shows the first history record of a legacy block.
                if (Container* h0 = m.deref(h->items[0]); h0 && h0->kind == Kind::Dict) {
                    for (size_t i = 0; i + 1 < h0->items.size(); i += 2) {
                        if (h0->items[i].tag != Tag::Str) continue;
                        const std::string_view key = m.str(h0->items[i]);
                        const Value& v = h0->items[i + 1];
                        if (key == "frames")
                            blk.stack = stackOf(m, v);
                        else if (key == "real_size" && v.isInt() && v.tag != Tag::UInt &&
                                 !v.isNegative() && !has_requested) {
                            blk.requested_size = v.asU64();
                            has_requested = true;
                        }
                    }
                }
            }
            if (!has_requested) blk.requested_size = blk.size;
            out.blocks.push_back(blk);
        }
    }
    if (out.blocks.size() - s.first_block > UINT32_MAX)
        return m.fail("too many blocks in one segment");
    s.block_count = uint32_t(out.blocks.size() - s.first_block);
    out.segments.push_back(s);
    releaseTree(m, Value{Tag::Ref, m.at(dict).generation, dict}, 4, false);
    return true;
}

Result<void> SnapshotMapper::addSegments(Machine& m, const Value& list, bool host) {
    Container* l = m.deref(list);
    if (!l || l->kind == Kind::Dict)
        return makeError("not a memory snapshot: 'segments' is not a list");
    if (!trace_.allocator_state) trace_.allocator_state.emplace();
    AllocatorState& state = *trace_.allocator_state;
    if (l->sink == 0) {
        if (!l->items.empty())
            return makeError("'segments' holds something other than segment dicts");
        return {};
    }
    if ((l->sink & 1) != kSegmentSink) return makeError("'segments' holds trace entries");
    SegmentSink& sink = segment_sinks_[(l->sink >> 1) - 1];
    const uint64_t offset = state.blocks.size();
    if (offset + sink.blocks.size() > UINT32_MAX) return makeError("too many blocks");
    for (Segment s : sink.segments) {
        if (stop()) return {};
        s.first_block += uint32_t(offset);
        if (host) s.device = -1;
        state.segments.push_back(s);
    }
    state.blocks.insert(state.blocks.end(), sink.blocks.begin(), sink.blocks.end());
    sink = SegmentSink{};
    return {};
}

}  // namespace memscope::pytorch_snapshot
