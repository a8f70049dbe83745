#include "pickle_machine.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "pickle_opcodes.h"
#include "projected_reserve.h"

namespace memscope::pickle {
namespace {

constexpr uint64_t kReportEvery = 16ull << 20;
// How far ahead of an entry dict flatDict() asks for the input, and how many
// cache lines from there. A snapshot's entry takes some 200 to 700 bytes, so
// the lines asked for are those of an entry one to four entries on.
constexpr uint64_t kPrefetchAhead = 1024;
constexpr uint64_t kPrefetchLines = 4;

uint64_t readLE(const uint8_t* p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

uint32_t le32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) v = __builtin_bswap32(v);
    return v;
}

// BININT1, BININT2 and BININT: their argument's width, and the value.
uint64_t binIntWidth(uint8_t op) {
    return op == BININT1 ? 1 : op == BININT2 ? 2 : 4;
}
Value binInt(uint8_t op, const uint8_t* p) {
    const uint64_t bits = readLE(p, int(binIntWidth(op)));
    // BININT alone is signed.
    return Value{Tag::Int, 0, op == BININT ? uint64_t(int64_t(int32_t(uint32_t(bits)))) : bits};
}

// A LONG1 of 1 to 8 bytes with 8 bytes readable after its length byte `p`
// (a snapshot's addresses and times): read in one load.
bool isShortLong(const uint8_t* p, uint64_t available) {
    return available >= 9 && p[0] != 0 && p[0] <= 8;
}
Value shortLong(const uint8_t* p) {
    uint64_t bits;
    std::memcpy(&bits, p + 1, 8);
    if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) bits = __builtin_bswap64(bits);
    const unsigned drop = 64 - 8 * unsigned(p[0]);
    // The low bytes, sign-extended from the top one (two's complement).
    return Value{Tag::Int, 0, uint64_t(int64_t(bits << drop) >> drop)};
}

std::string hexByte(uint8_t b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", b);
    return buf;
}

}  // namespace

double Value::asDouble() const {
    if (tag == Tag::Float) {
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
    }
    if (tag == Tag::Int) return double(int64_t(bits));
    return double(bits);
}

Machine::Machine(std::span<const std::byte> input, Handler& handler, Limits limits)
    : data_(reinterpret_cast<const uint8_t*>(input.data())),
      size_(input.size()),
      handler_(handler),
      limits_(limits),
      cache_runs_(handler.cachesPlainBatches()) {}

bool Machine::fail(std::string message) {
    // An entry mapped elsewhere that failed came before this opcode.
    if (error_.empty()) handler_.settle(*this);
    return failAt(std::move(message), op_offset_);
}

bool Machine::failAt(std::string message, uint64_t offset) {
    if (error_.empty())
        error_ = "pickle: " + message + " (at offset " + std::to_string(offset) + ")";
    return false;
}

bool Machine::needSlow(uint64_t n) {
    return fail("truncated: opcode " + std::string(opName(data_[op_offset_])) + " needs " +
                std::to_string(n) + " more bytes, the file has " + std::to_string(size_ - pos_));
}

bool Machine::popMark(size_t& mark) {
    if (marks_.empty()) return fail(std::string(opName(data_[op_offset_])) + " without a MARK");
    mark = marks_.back();
    marks_.pop_back();
    if (mark > stack_.size()) return fail("MARK above the stack");
    return true;
}

Value Machine::newContainer(Kind kind) {
    // Over the limit: the next step sees the error and stops.
    if (live_containers_ >= limits_.max_live_containers)
        fail("more live containers than the limit");
    uint32_t index;
    if (!free_.empty()) {
        index = free_.back();
        free_.pop_back();
    } else {
        index = uint32_t(containers_.size());
        containers_.emplace_back();
    }
    Container& c = containers_[index];
    c.kind = kind;
    c.live = true;
    ++live_containers_;
    return Value{Tag::Ref, c.generation, index};
}

void Machine::release(uint32_t index) {
    if (index >= containers_.size()) return;
    Container& c = containers_[index];
    if (!c.live) return;
    if (c.memo >= 0 && uint64_t(c.memo) < memo_.size()) {
        Value& slot = memo_[size_t(c.memo)];
        if (slot.tag == Tag::Ref && slot.bits == index && slot.aux == c.generation)
            slot = c.replacement.tag == Tag::None ? Value{Tag::Dead, 0, 0} : c.replacement;
    }
    live_items_ -= c.items.size();
    if (c.items.capacity() > 256)
        std::vector<Value>().swap(c.items);
    else
        c.items.clear();
    c.replacement = Value{};
    c.memo = -1;
    c.sink = 0;
    c.live = false;
    c.folded = false;
    c.shared = false;
    ++c.generation;
    --live_containers_;
    free_.push_back(index);
}

void Machine::unfold(uint32_t list) {
    const size_t before = containers_[list].items.size();
    handler_.unfold(*this, list);
    Container& c = containers_[list];
    c.folded = false;
    live_items_ += c.items.size() - before;
}

bool Machine::appendTo(uint32_t list, Value item) {
    if (containers_[list].folded) unfold(list);
    bool keep = true;
    if (!handler_.onAppend(*this, list, item, keep)) return false;
    // The handler may have created containers: take the reference afterwards.
    return keep ? addItem(containers_[list], item) : true;
}

Container* Machine::containerAt(size_t stack_index, Kind kind, const char* what) {
    Container* c = stack_index < stack_.size() ? deref(stack_[stack_index]) : nullptr;
    if (!c || c->kind != kind) {
        fail(std::string(what) + " on something that is not a live " +
             (kind == Kind::Dict  ? "dict"
              : kind == Kind::Set ? "set"
                                  : "list"));
        return nullptr;
    }
    return c;
}

Limits Limits::forInput(uint64_t bytes) {
    Limits limits;
    limits.max_live_items =
        std::max<uint64_t>(1u << 20, std::min<uint64_t>(limits.max_live_items, bytes));
    limits.max_memo = std::max<uint64_t>(limits.max_memo, bytes / 16);
    return limits;
}

bool Machine::memoPut(uint64_t index) {
    if (stack_.empty()) return fail("memo store with an empty stack");
    // The next slot (MEMOIZE, and how Python numbers BINPUTs): a fresh slot
    // was never written, so no cached run can depend on it.
    if (index == memo_.size() && index < limits_.max_memo) {
        const Value& v = stack_.back();
        memo_.push_back(v);
        if (Container* c = deref(v)) c->memo = int64_t(index);
        return true;
    }
    if (index >= limits_.max_memo)
        return fail("memo index " + std::to_string(index) + " beyond the limit");
    if (index == memo_.size()) {
        memo_.push_back(Value{Tag::Unset, 0, 0});
    } else if (index > memo_.size()) {
        // Python writes memo indexes densely; gaps are an attempt to make us
        // allocate. All gaps together may not exceed the memo's real size.
        memo_gaps_ += index - memo_.size();
        if (memo_gaps_ >
                std::max<uint64_t>(65536, memo_.size() - memo_gaps_ + index - memo_.size()) ||
            index > memo_.size() + 65536)
            return fail("memo index " + std::to_string(index) + " far beyond the memo (" +
                        std::to_string(memo_.size()) + " slots): not a pickle Python writes");
        memo_.resize(size_t(index) + 1, Value{Tag::Unset, 0, 0});
    }
    // Equal bytes no longer mean equal values once a slot is written again
    // (CPython never does).
    if (index < memo_.size() && memo_[size_t(index)].tag != Tag::Unset) run_cache_.clear();
    const Value& v = stack_.back();
    memo_[size_t(index)] = v;
    if (Container* c = deref(v)) c->memo = int64_t(index);
    return true;
}

// Most of a snapshot's opcodes are memo references in a row (the frames of a
// stack), or memo references between small integers (an entry's keys and
// its address, size, stream and time): one loop reads the whole run,
// without the per-opcode dispatch and bookkeeping of run(). The run starts
// with a memo reference and ends before the first opcode it does not take,
// which run() then reads as usual. It is bounded by the stack's limit, so
// cancel and progress are still polled every few million values.
bool Machine::valueRun(uint8_t op) {
    const uint8_t* const data = data_;
    const Value* const memo = memo_.data();
    const uint64_t memo_size = memo_.size();
    uint64_t pos = pos_;
    uint64_t op_at = op_offset_;
    // The stack grows in chunks; `limit` is the chunk's end or the stack's limit.
    constexpr size_t kChunk = 4096;
    auto room = [&] {
        return limits_.max_stack - std::min<uint64_t>(limits_.max_stack, stack_.size());
    };
    Value* out = stack_.reserveFor(kChunk);
    Value* limit = out + std::min<uint64_t>(room(), kChunk);
    uint64_t short_by = 0;  // > 0: the opcode at op_at needs this many bytes more than are left
    for (;;) {
        Value v;
        if (op == BINGET || op == LONG_BINGET) {
            uint64_t index;
            if (op == BINGET) {
                if (pos >= size_) {
                    short_by = 1;
                    break;
                }
                index = data[pos++];
            } else {
                if (size_ - pos < 4) {
                    short_by = 4;
                    break;
                }
                index = le32(data + pos);
                pos += 4;
            }
            if (index >= memo_size || memo[index].tag == Tag::Unset) {
                stack_.setEnd(out);
                pos_ = pos;
                op_offset_ = op_at;
                return memoMissing(index);
            }
            v = memo[index];
        } else if (op == LONG1) {  // isShortLong, checked below
            v = shortLong(data + pos);
            pos += 1 + data[pos];
        } else {
            const uint64_t n = binIntWidth(op);
            if (size_ - pos < n) {
                short_by = n;
                break;
            }
            v = binInt(op, data + pos);
            pos += n;
        }
        if (out == limit) {
            // The chunk is full: past the limit, or grow and go on.
            stack_.setEnd(out);
            if (stack_.size() >= limits_.max_stack) {
                pos_ = pos;
                op_offset_ = op_at;
                return fail("stack deeper than the limit");
            }
            out = stack_.reserveFor(kChunk);
            limit = out + std::min<uint64_t>(room(), kChunk);
        }
        *out++ = v;
        if (pos >= size_) break;
        op = data[pos];
        const bool short_long = op == LONG1 && isShortLong(data + pos + 1, size_ - pos - 1);
        if (op != BINGET && op != LONG_BINGET && op != BININT1 && op != BININT2 && op != BININT &&
            !short_long)
            break;
        op_at = pos++;
    }
    stack_.setEnd(out);
    pos_ = pos;
    op_offset_ = op_at;
    if (short_by) return need(short_by);
    return true;
}

// Right after a MARK: when a run of memo references and an APPENDS follow,
// and the list below the MARK would take them as one plain batch, a batch of
// the same bytes folded before gives the list its replacement at once. A
// miss is remembered for appendAll to cache. Anything else (a FRAME inside
// the run, a truncated run, a limit the batch would reach) takes the
// ordinary path, which gives the ordinary errors.
void Machine::foldCachedRun() {
    if (stack_.empty() || !run_cache_.enabled()) return;
    Container* list = deref(stack_.back());
    if (!list || list->kind != Kind::List || list->folded || !list->items.empty()) return;
    if (size_ - pos_ <= MemoRunCache::kPrefix) return;
    const uint8_t* const at = data_ + pos_;
    const uint64_t hash = MemoRunCache::hashPrefix(at);
    // A hit is the same bytes as a run that was checked when it was stored:
    // the same opcodes, and an APPENDS after them.
    if (const auto hit = run_cache_.find(at, size_ - pos_, hash, APPENDS); hit.replacement) {
        // What the ordinary path would refuse goes there (for its error).
        if (stack_.size() + hit.values <= limits_.max_stack &&
            live_items_ + hit.values <= limits_.max_live_items) {
            list->replacement = *hit.replacement;
            list->folded = true;
            marks_.pop_back();
            pos_ += hit.length + 1;  // past the APPENDS
            handler_.onBatchEnd(*this);
            return;
        }
    }
    uint64_t p = pos_, n = 0;
    for (;; ++n) {
        if (p >= size_) return;
        const uint8_t op = data_[p];
        if (op == BINGET)
            p += 2;
        else if (op == LONG_BINGET)
            p += 5;
        else
            break;
    }
    if (data_[p] == APPENDS && p - pos_ >= MemoRunCache::kPrefix)
        pending_run_ = PendingRun{pos_, p, n, hash, true};
}

// A dict of plain values at pos_ (just past its EMPTY_DICT) that the handler
// takes whole: its memo store, MARK, keys and values, SETITEMS. A value is a
// memo reference to something plain, an integer, a float, None, a bool or a
// string, or a list of memo references whose bytes the run cache knows (a
// frames list).
// Anything else (a container, a frames list the cache does not know, a
// truncated or odd opcode) leaves the dict to the ordinary path, which reads
// it from the start and gives the ordinary errors: nothing is changed before
// the handler took it.
FlatDict Machine::flatDict() {
    const size_t mark = marks_.back();
    const Value list = stack_[mark - 1];
    Container* l = deref(list);
    if (!l || l->kind != Kind::List || l->folded ||
        !handler_.takesFlatDicts(*this, uint32_t(list.bits)))
        return FlatDict::NotTaken;
    // Items read the ordinary way before this one (an entry the whole read
    // left to it) go to the list first, in their order, as APPENDS would
    // append them: the handler sees every item in the order it comes.
    if (mark < stack_.size()) {
        if (!appendAll(uint32_t(list.bits), mark)) return FlatDict::Failed;
        // An entry that held the list itself frees it with its own tree: the
        // ordinary path then reports the APPENDS on a list that is gone.
        if (!deref(list)) return FlatDict::NotTaken;
    }
    const uint8_t* const d = data_;
    const uint64_t end = size_;
    // The input a few entries on, into the cache before it is read: the run
    // cache compares a frames list's bytes from its far end first, a jump of
    // hundreds of bytes that the hardware's stream prefetcher had not reached.
    if (end - pos_ > kPrefetchAhead + kPrefetchLines * 64)
        for (uint64_t k = 0; k < kPrefetchLines; ++k)
            __builtin_prefetch(d + pos_ + kPrefetchAhead + 64 * k);
    // The memo does not change while the dict is read: read through locals,
    // which the stores into `items` cannot be taken to alias.
    const Value* const memo = memo_.data();
    const uint64_t base = memo_.size();
    uint64_t p = pos_;
    // The memo stores, in order: the dict's, then its lists'.
    Value* const stores = flat_stores_.data();
    constexpr size_t kMaxStores = std::tuple_size_v<decltype(flat_stores_)>;
    size_t nstores = 0;
    // A store of the next slot: MEMOIZE, or BINPUT/LONG_BINPUT numbered as
    // Python numbers them.
    auto store = [&]() {
        if (p >= end || nstores == kMaxStores) return false;
        const uint64_t want = base + nstores;
        if (d[p] == MEMOIZE) {
            p += 1;
        } else if (d[p] == BINPUT && end - p >= 2 && d[p + 1] == want) {
            p += 2;
        } else if (d[p] == LONG_BINPUT && end - p >= 5 && le32(d + p + 1) == want) {
            p += 5;
        } else {
            return false;
        }
        ++nstores;
        return true;
    };
    if (!store() || p >= end || d[p] != MARK) return FlatDict::NotTaken;
    ++p;
    Value* const items = flat_items_.data();
    constexpr size_t kMaxItems = std::tuple_size_v<decltype(flat_items_)>;
    size_t n = 0;
    // Tests in the order of how often each opcode comes: a switch's jump
    // table mispredicted on a quarter of them.
    for (;;) {
        if (p >= end || n == kMaxItems) return FlatDict::NotTaken;
        const uint8_t op = d[p];
        Value v;
        if (op == LONG_BINGET || op == BINGET) {
            uint64_t index;
            if (op == LONG_BINGET) {
                if (end - p < 5) return FlatDict::NotTaken;
                index = le32(d + p + 1);
                p += 5;
            } else {
                if (end - p < 2) return FlatDict::NotTaken;
                index = d[p + 1];
                p += 2;
            }
            if (index >= base) return FlatDict::NotTaken;
            v = memo[index];
            if (v.tag == Tag::Unset || v.tag == Tag::Ref) return FlatDict::NotTaken;
        } else if (op == LONG1) {
            if (!isShortLong(d + p + 1, end - p - 1)) return FlatDict::NotTaken;
            v = shortLong(d + p + 1);
            p += 2 + d[p + 1];
        } else if (op == BININT1 || op == BININT2 || op == BININT) {
            const uint64_t w = binIntWidth(op);
            if (end - p - 1 < w) return FlatDict::NotTaken;
            v = binInt(op, d + p + 1);
            p += 1 + w;
        } else if (op == SETITEMS) {
            ++p;
            break;
        } else if (op == EMPTY_LIST) {
            // A list value of memo references the cache has folded before.
            if (n % 2 == 0 || !run_cache_.enabled()) return FlatDict::NotTaken;
            p += 1;
            if (!store() || p >= end || d[p] != MARK) return FlatDict::NotTaken;
            p += 1;
            if (end - p <= MemoRunCache::kPrefix || (d[p] != BINGET && d[p] != LONG_BINGET))
                return FlatDict::NotTaken;
            const auto hit =
                run_cache_.find(d + p, end - p, MemoRunCache::hashPrefix(d + p), APPENDS);
            // The ordinary path's limits, for its errors.
            if (!hit.replacement || stack_.size() + hit.values > limits_.max_stack ||
                live_items_ + hit.values > limits_.max_live_items)
                return FlatDict::NotTaken;
            v = *hit.replacement;
            stores[nstores - 1] = v;  // the list's slot holds its replacement
            p += hit.length + 1;      // past the APPENDS
        } else if (op == FRAME) {     // a frame boundary may fall between any two values
            if (end - p < 9) return FlatDict::NotTaken;
            const uint64_t len = readLE(d + p + 1, 8);
            p += 9;
            if (len > end - p) return FlatDict::NotTaken;
            continue;
        } else if (op == SHORT_BINUNICODE || op == BINUNICODE) {
            // A string written afresh (PyTorch 2.5's 'N/A' compile_context:
            // a new object per entry), and its memo store when it has one.
            const uint64_t head = op == SHORT_BINUNICODE ? 2 : 5;
            if (end - p < head) return FlatDict::NotTaken;
            const uint64_t length = op == SHORT_BINUNICODE ? d[p + 1] : le32(d + p + 1);
            if (length > limits_.max_string || end - p - head < length) return FlatDict::NotTaken;
            v = Value{Tag::Str, uint32_t(length), p + head};
            p += head + length;
            if (p < end && (d[p] == MEMOIZE || d[p] == BINPUT || d[p] == LONG_BINPUT)) {
                if (!store()) return FlatDict::NotTaken;
                stores[nstores - 1] = v;
            }
        } else if (op == NONE) {
            v = Value{Tag::None, 0, 0};
            p += 1;
        } else if (op == NEWTRUE || op == NEWFALSE) {
            v = Value{Tag::Bool, 0, op == NEWTRUE ? 1u : 0u};
            p += 1;
        } else if (op == BINFLOAT) {
            if (end - p < 9) return FlatDict::NotTaken;
            uint64_t bits = 0;
            for (int i = 1; i <= 8; ++i) bits = (bits << 8) | d[p + i];  // big-endian
            v = Value{Tag::Float, 0, bits};
            p += 9;
        } else {
            return FlatDict::NotTaken;
        }
        items[n++] = v;
    }
    if (n % 2 != 0 || base + nstores > limits_.max_memo) return FlatDict::NotTaken;
    Value self;
    const FlatDict done =
        handler_.onFlatDict(*this, uint32_t(list.bits), std::span<const Value>(items, n), self);
    if (done != FlatDict::Taken) return done;
    stores[0] = self;
    memo_.insert(memo_.end(), stores, stores + nstores);
    pos_ = p;
    return FlatDict::Taken;
}

bool Machine::memoMissing(uint64_t index) {
    return fail("memo index " + std::to_string(index) + " was never stored");
}

// Items that are not containers cannot be trace entries, segments or frames:
// they go straight in; only containers are shown to the handler.
bool Machine::appendAll(uint32_t list, size_t from) {
    const size_t n = stack_.size() - from;
    // This APPENDS ends the run foldCachedRun() saw: the batch is exactly it.
    const bool cacheable = pending_run_.active && pending_run_.end == op_offset_;
    pending_run_.active = false;
    live_items_ += n;
    if (live_items_ > limits_.max_live_items) return fail("more live objects than the limit");
    live_items_ -= n;
    if (containers_[list].folded) unfold(list);
    if (containers_[list].items.empty()) {
        bool plain = true;
        for (size_t k = from; k < stack_.size() && plain; ++k) plain = stack_[k].tag != Tag::Ref;
        if (plain && n > 0) {
            bool consumed = false;
            if (!handler_.onPlainBatch(
                    *this, list, std::span<const Value>(stack_.data() + from, stack_.size() - from),
                    consumed))
                return false;
            if (consumed) {
                if (cacheable)
                    run_cache_.insert(
                        std::span<const uint8_t>(data_ + pending_run_.start,
                                                 pending_run_.end - pending_run_.start),
                        pending_run_.values, pending_run_.hash, containers_[list].replacement);
                stack_.resize(from);
                handler_.onBatchEnd(*this);
                return true;
            }
        }
    }
    size_t i = from;
    while (i < stack_.size()) {
        if (stack_[i].tag == Tag::Ref || stack_[i].tag == Tag::Entry ||
            stack_[i].tag == Tag::Pending) {
            if (!appendTo(list, stack_[i])) return false;
            ++i;
            continue;
        }
        size_t j = i + 1;  // a run of plain values (e.g. interned frames): one insert
        while (j < stack_.size() && stack_[j].tag != Tag::Ref && stack_[j].tag != Tag::Entry &&
               stack_[j].tag != Tag::Pending)
            ++j;
        auto& items = containers_[list].items;
        items.insert(items.end(), stack_.begin() + std::ptrdiff_t(i),
                     stack_.begin() + std::ptrdiff_t(j));
        live_items_ += j - i;
        i = j;
    }
    stack_.resize(from);
    handler_.onBatchEnd(*this);
    return true;
}

bool Machine::pushString(Tag tag, uint64_t length) {
    if (length > limits_.max_string)
        return fail("string of " + std::to_string(length) + " bytes exceeds the limit of " +
                    std::to_string(limits_.max_string));
    if (!need(length)) return false;
    Value v{tag, uint32_t(length), pos_};
    pos_ += length;
    return push(v);
}

bool Machine::pushLong(uint64_t n) {
    // Snapshot integers are at most 64-bit (pointers >= 2^63 take 9 bytes).
    if (n > 9) return fail("integer of " + std::to_string(n) + " bytes does not fit 64 bits");
    if (!need(n)) return false;
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    if (n == 0) return push(Value{Tag::Int, 0, 0});
    if (n == 9) {
        const uint64_t low = readLE(p, 8);
        if (p[8] == 0x00) return push(Value{int64_t(low) < 0 ? Tag::UInt : Tag::Int, 0, low});
        if (p[8] == 0xff && int64_t(low) < 0) return push(Value{Tag::Int, 0, low});
        return fail("integer does not fit 64 bits");
    }
    uint64_t v = readLE(p, int(n));
    if (n < 8 && (p[n - 1] & 0x80)) v |= ~uint64_t(0) << (8 * n);  // sign-extend
    return push(Value{Tag::Int, 0, v});
}

bool Machine::buildTuple(size_t from) {
    Value t = newContainer(Kind::Tuple);
    Container& c = containers_[t.bits];
    for (size_t i = from; i < stack_.size(); ++i)
        if (!addItem(c, stack_[i])) return false;
    stack_.resize(from);
    return push(t);
}

Result<Value> Machine::run(const TaskContext& ctx, const std::function<void(uint64_t)>& consumed) {
    Result<Value> out = runToStop(ctx, consumed);
    // However it ended (a cancel too): what the handler maps elsewhere reads
    // the input, which the caller may free once this returns.
    handler_.settle(*this);
    if (out && !error_.empty()) return makeError(error_);
    return out;
}

Result<Value> Machine::runToStop(const TaskContext& ctx,
                                 const std::function<void(uint64_t)>& consumed) {
    uint64_t next_report = kReportEvery;
    while (!stopped_) {
        // Cancel is polled every 4096 opcodes too: one opcode costs at most
        // one entry's conversion, so a cancel takes effect within milliseconds.
        if ((++ops_ & 0xfff) == 0 && ctx.cancelled()) return cancelledError();
        if (pos_ >= next_report) {
            if (ctx.cancelled()) return cancelledError();
            ctx.report(pos_, size_);
            if (consumed) consumed(pos_);
            reserveProjected(memo_, pos_, size_, limits_.max_memo, &memo_warmer_);
            handler_.onProgress(pos_, size_);
            next_report = pos_ + kReportEvery;
        }
        op_offset_ = pos_;
        if (pos_ >= size_) {
            fail("truncated: the file ends before the STOP opcode");
            break;
        }
        const uint8_t op = data_[pos_++];
        if (!stepHot(op) || !error_.empty()) break;
    }
    if (!error_.empty()) return makeError(error_);
    ctx.report(size_, size_);
    return stack_.back();
}

// The opcodes that make a snapshot's trace entries, handled without the call
// into step(): its prologue, its 264-byte frame (its error paths build
// strings) and its jump table were much of what these opcodes cost, and
// every entry runs nine of them.
[[gnu::always_inline]] inline bool Machine::stepHot(uint8_t op) {
    switch (op) {
        case BINGET:
        case LONG_BINGET:
            return valueRun(op);
        case MEMOIZE:
            return memoPut(memo_.size());
        case BININT1:
        case BININT2:
        case BININT: {
            const uint64_t n = binIntWidth(op);
            if (!need(n)) return false;
            pos_ += n;
            return push(binInt(op, data_ + pos_ - n));
        }
        case LONG1: {
            if (!isShortLong(data_ + pos_, size_ - pos_)) break;  // step() reads the others
            const Value v = shortLong(data_ + pos_);
            pos_ += 1 + data_[pos_];
            return push(v);
        }
        case EMPTY_DICT:
            // In a batch of a list the handler reads dicts of: perhaps a
            // trace entry, read whole.
            if (!marks_.empty() && marks_.back() > 0 && marks_.back() <= stack_.size()) {
                const FlatDict flat = flatDict();
                if (flat != FlatDict::NotTaken) return flat == FlatDict::Taken;
            }
            return push(newContainer(Kind::Dict));
        case EMPTY_LIST:
            return push(newContainer(Kind::List));
        case MARK:
            return pushMark();
        case SETITEMS:
            return setItems();
        default:
            break;
    }
    return step(op);
}

bool Machine::pushMark() {
    if (marks_.size() >= limits_.max_marks) return fail("MARKs nested deeper than the limit");
    marks_.push_back(stack_.size());
    if (cache_runs_ && pos_ < size_ && (data_[pos_] == BINGET || data_[pos_] == LONG_BINGET))
        foldCachedRun();
    return true;
}

bool Machine::setItems() {
    size_t m;
    if (!popMark(m)) return false;
    if (m == 0) return fail("SETITEMS with no dict");
    if ((stack_.size() - m) % 2) return fail("SETITEMS with an odd number of values");
    Container* d = containerAt(m - 1, Kind::Dict, "SETITEMS");
    if (!d) return false;
    live_items_ += stack_.size() - m;
    if (live_items_ > limits_.max_live_items) return fail("more live objects than the limit");
    for (size_t i = m; i < stack_.size(); ++i) markShared(stack_[i]);
    d->items.insert(d->items.end(), stack_.begin() + std::ptrdiff_t(m), stack_.end());
    stack_.resize(m);
    return true;
}

bool Machine::step(uint8_t op) {
    switch (op) {
        case PROTO: {
            if (!need(1)) return false;
            protocol_ = data_[pos_++];
            if (protocol_ < 2 || protocol_ > 5)
                return fail("pickle protocol " + std::to_string(protocol_) +
                            " is not supported (2 to 5 are)");
            return true;
        }
        case FRAME: {
            if (!need(8)) return false;
            const uint64_t len = readLE(data_ + pos_, 8);
            pos_ += 8;
            if (len > size_ - pos_)
                return fail("truncated: a FRAME of " + std::to_string(len) +
                            " bytes runs past the end");
            return true;
        }
        case STOP:
            if (stack_.empty()) return fail("STOP with an empty stack");
            stopped_ = true;
            return true;
        case POP:
            if (!marks_.empty() && marks_.back() == stack_.size()) {
                marks_.pop_back();
                return true;
            }
            if (stack_.empty()) return fail("POP from an empty stack");
            dropPopped(stack_.back());
            stack_.pop_back();
            return true;
        case POP_MARK: {
            size_t m;
            if (!popMark(m)) return false;
            for (size_t i = m; i < stack_.size(); ++i) dropPopped(stack_[i]);
            stack_.resize(m);
            return true;
        }
        case DUP:
            if (stack_.empty()) return fail("DUP on an empty stack");
            markShared(stack_.back());
            return push(stack_.back());
        case BINPUT:
            if (!need(1)) return false;
            return memoPut(data_[pos_++]);
        case LONG_BINPUT:
            if (!need(4)) return false;
            pos_ += 4;
            return memoPut(readLE(data_ + pos_ - 4, 4));
        case NONE:
            return push(Value{Tag::None, 0, 0});
        case NEWTRUE:
            return push(Value{Tag::Bool, 0, 1});
        case NEWFALSE:
            return push(Value{Tag::Bool, 0, 0});
        case LONG1:
            if (!need(1)) return false;
            return pushLong(data_[pos_++]);
        case LONG4: {
            if (!need(4)) return false;
            const int32_t n = int32_t(uint32_t(readLE(data_ + pos_, 4)));
            pos_ += 4;
            if (n < 0) return fail("LONG4 with a negative length");
            return pushLong(uint64_t(n));
        }
        case BINFLOAT: {
            if (!need(8)) return false;
            uint64_t bits = 0;
            for (int i = 0; i < 8; ++i) bits = (bits << 8) | data_[pos_ + i];  // big-endian
            pos_ += 8;
            return push(Value{Tag::Float, 0, bits});
        }
        case SHORT_BINUNICODE:
            if (!need(1)) return false;
            return pushString(Tag::Str, data_[pos_++]);
        case SHORT_BINSTRING:
            if (!need(1)) return false;
            return pushString(Tag::Str, data_[pos_++]);
        case SHORT_BINBYTES:
            if (!need(1)) return false;
            return pushString(Tag::Bytes, data_[pos_++]);
        case BINUNICODE:
        case BINBYTES:
            if (!need(4)) return false;
            pos_ += 4;
            return pushString(op == BINUNICODE ? Tag::Str : Tag::Bytes,
                              readLE(data_ + pos_ - 4, 4));
        case BINSTRING: {
            if (!need(4)) return false;
            const int32_t n = int32_t(uint32_t(readLE(data_ + pos_, 4)));
            pos_ += 4;
            if (n < 0) return fail("BINSTRING with a negative length");
            return pushString(Tag::Str, uint64_t(n));
        }
        case BINUNICODE8:
        case BINBYTES8:
        case BYTEARRAY8:
            if (!need(8)) return false;
            pos_ += 8;
            return pushString(op == BINUNICODE8 ? Tag::Str : Tag::Bytes,
                              readLE(data_ + pos_ - 8, 8));
        case EMPTY_TUPLE:
            return push(newContainer(Kind::Tuple));
        case EMPTY_SET:
            return push(newContainer(Kind::Set));
        case TUPLE1:
        case TUPLE2:
        case TUPLE3: {
            const size_t n = size_t(op - TUPLE1 + 1);
            if (stack_.size() < n)
                return fail(std::string(opName(op)) + " with too few values on the stack");
            if (!marks_.empty() && marks_.back() > stack_.size() - n)
                return fail(std::string(opName(op)) + " across a MARK");
            return buildTuple(stack_.size() - n);
        }
        case TUPLE:
        case FROZENSET: {
            size_t m;
            if (!popMark(m)) return false;
            if (op == TUPLE) return buildTuple(m);
            Value s = newContainer(Kind::Set);
            for (size_t i = m; i < stack_.size(); ++i)
                if (!addItem(containers_[s.bits], stack_[i])) return false;
            stack_.resize(m);
            return push(s);
        }
        case LIST: {
            size_t m;
            if (!popMark(m)) return false;
            const Value l = newContainer(Kind::List);
            if (!appendAll(uint32_t(l.bits), m)) return false;
            return push(l);
        }
        case DICT: {
            size_t m;
            if (!popMark(m)) return false;
            if ((stack_.size() - m) % 2) return fail("DICT with an odd number of values");
            const Value d = newContainer(Kind::Dict);
            for (size_t i = m; i < stack_.size(); ++i)
                if (!addItem(containers_[d.bits], stack_[i])) return false;
            stack_.resize(m);
            return push(d);
        }
        case APPEND: {
            if (stack_.size() < 2) return fail("APPEND with too few values on the stack");
            if (!marks_.empty() && marks_.back() > stack_.size() - 2)
                return fail("APPEND across a MARK");
            if (!containerAt(stack_.size() - 2, Kind::List, "APPEND")) return false;
            const Value item = stack_.back();
            stack_.pop_back();
            if (!appendTo(uint32_t(stack_.back().bits), item)) return false;
            handler_.onBatchEnd(*this);
            return true;
        }
        case APPENDS: {
            size_t m;
            if (!popMark(m)) return false;
            if (m == 0 || !containerAt(m - 1, Kind::List, "APPENDS"))
                return m == 0 ? fail("APPENDS with no list") : false;
            return appendAll(uint32_t(stack_[m - 1].bits), m);
        }
        case ADDITEMS: {
            size_t m;
            if (!popMark(m)) return false;
            if (m == 0) return fail("ADDITEMS with no set");
            Container* s = containerAt(m - 1, Kind::Set, "ADDITEMS");
            if (!s) return false;
            for (size_t i = m; i < stack_.size(); ++i)
                if (!addItem(*s, stack_[i])) return false;
            stack_.resize(m);
            return true;
        }
        case SETITEM: {
            if (stack_.size() < 3) return fail("SETITEM with too few values on the stack");
            if (!marks_.empty() && marks_.back() > stack_.size() - 3)
                return fail("SETITEM across a MARK");
            Container* d = containerAt(stack_.size() - 3, Kind::Dict, "SETITEM");
            if (!d) return false;
            if (!addItem(*d, stack_[stack_.size() - 2]) || !addItem(*d, stack_.back()))
                return false;
            stack_.resize(stack_.size() - 2);
            return true;
        }
        case NEXT_BUFFER:
        case READONLY_BUFFER:
            return fail(std::string("opcode ") + std::string(opName(op)) +
                        " needs out-of-band buffers, which snapshots never use: refused");
        case INT:
        case LONG:
        case FLOAT:
        case STRING:
        case UNICODE:
        case GET:
        case PUT:
            return fail("protocol-0 text opcode " + std::string(opName(op)) + " (" + hexByte(op) +
                        ") is not supported");
        default:
            if (runsCode(op))
                return fail("refused opcode " + std::string(opName(op)) + " (" + hexByte(op) +
                            "): it would make Python import or call code, which a memory snapshot "
                            "never needs");
            return fail("unknown opcode " + hexByte(op));
    }
}

}  // namespace memscope::pickle
