#include "entry_pipeline.h"

#include <algorithm>
#include <utility>

namespace memscope::pytorch_snapshot {

using pickle::Tag;
using pickle::Value;

void EntryPipeline::Block::clear() {
    used = 0;
    entries = 0;
    sinks.clear();
    tasks.clear();
}

EntryPipeline::EntryPipeline(MapFn map, size_t block_entries)
    : map_(std::move(map)), block_entries_(std::max<size_t>(1, block_entries)) {
    reset(current_);
}

uint64_t EntryPipeline::add(std::span<const Value> items, uint32_t sink, uint64_t offset) {
    const size_t need = items.size() + 1;
    if (current_.values.size() - current_.used < need) {
        if (current_.entries > 0) flush();
        if (current_.values.size() - current_.used < need)
            current_.values.resize(current_.used + need);
    }
    Value* out = current_.values.data() + current_.used;
    *out = Value{Tag::None, uint32_t(items.size()), offset};
    std::copy(items.begin(), items.end(), out + 1);
    current_.used += need;
    if (current_.sinks.empty() || current_.sinks.back().second != sink)
        current_.sinks.emplace_back(current_.entries, sink);
    ++current_.entries;
    idle_ = false;
    const uint64_t seq = next_seq_++;
    if (current_.entries >= block_entries_) flush();
    return seq;
}

void EntryPipeline::beforeNext(std::function<void()> task) {
    current_.tasks.push_back(std::move(task));
    idle_ = false;
}

// Extends the latest run when `seq` continues it, else starts one.
void EntryPipeline::record(uint64_t seq, uint64_t event) {
    if (!runs_.empty()) {
        Run& r = runs_.back();
        const uint64_t mapped = r.count - (dropped_.size() - r.dropped_before);
        if (seq == r.first_seq + r.count &&
            (event == kDropped || r.first_event == kDropped || event == r.first_event + mapped)) {
            if (event == kDropped)
                dropped_.push_back(seq);
            else if (r.first_event == kDropped)
                r.first_event = event - mapped;  // mapped is 0 here: all before were dropped
            ++r.count;
            return;
        }
    }
    runs_.push_back(Run{seq, event, 1, dropped_.size()});
    if (event == kDropped) dropped_.push_back(seq);
}

void EntryPipeline::mapBlock(Block& block) {
    for (auto& task : block.tasks) task();
    if (failed()) return;
    std::string error;
    const Value* at = block.values.data();
    size_t sink = 0;
    for (uint32_t i = 0; i < block.entries; ++i) {
        while (sink + 1 < block.sinks.size() && block.sinks[sink + 1].first <= i) ++sink;
        const Value header = *at;
        const std::span<const Value> items(at + 1, header.aux);
        at += 1 + header.aux;
        uint64_t event = kDropped;
        if (!map_(items, block.sinks[sink].second, event, error)) {
            failure_ = Failure{std::move(error), header.bits};
            failed_.store(true, std::memory_order_relaxed);
            return;
        }
        record(block.first_seq + i, event);
    }
}

void EntryPipeline::reset(Block& block) {
    block.clear();
    block.first_seq = next_seq_;
    // A trace entry is a dozen values or so: rarely grown past this.
    const size_t room = block_entries_ * 16;
    if (block.values.size() < room) block.values.resize(room);
}

void EntryPipeline::flush() {
    if (current_.empty()) return;
    if (!worker_.hand(current_)) mapBlock(current_);  // no thread to be had: mapped here
    reset(current_);
}

void EntryPipeline::drain() {
    if (idle_) return;
    idle_ = true;
    worker_.wait();
    // The worker is idle: the partly filled block is mapped here, without a
    // hand-over.
    if (current_.empty()) return;
    mapBlock(current_);
    reset(current_);
}

std::optional<EntryPipeline::Failure> EntryPipeline::takeFailure() {
    return std::exchange(failure_, std::nullopt);
}

Value EntryPipeline::resolve(uint64_t seq) const {
    const auto after = std::upper_bound(runs_.begin(), runs_.end(), seq,
                                        [](uint64_t s, const Run& r) { return s < r.first_seq; });
    if (after == runs_.begin()) return Value{Tag::Dead, 0, 0};
    const Run& r = *(after - 1);
    if (seq >= r.first_seq + r.count) return Value{Tag::Dead, 0, 0};
    const auto from = dropped_.begin() + std::ptrdiff_t(r.dropped_before);
    const auto at = std::lower_bound(from, dropped_.end(), seq);
    if (at != dropped_.end() && *at == seq) return Value{Tag::Dead, 0, 0};
    return Value{Tag::Entry, 0, r.first_event + (seq - r.first_seq) - uint64_t(at - from)};
}

}  // namespace memscope::pytorch_snapshot
