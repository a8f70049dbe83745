#pragma once
// A safe pickle virtual machine over bytes in memory. It understands the data
// opcodes of protocols 2 to 5 and refuses everything that would make Python
// import or call code. It keeps no object tree of its own: a Handler sees every
// item appended to a list and may consume it (the snapshot mapper turns trace
// entries into Events on the spot), after which the machine frees the item's
// containers and the memo keeps only a compact replacement (a FrameId or
// StackId) or nothing. Limits on string length, memo size, stack depth and live
// objects keep a hostile file from exhausting memory.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memo_run_cache.h"
#include "memscope/base/page_warmer.h"
#include "memscope/base/result.h"
#include "memscope/open/plugin.h"
#include "pickle_value.h"
#include "value_stack.h"

namespace memscope::pickle {

enum class Kind : uint8_t { List, Dict, Tuple, Set };

struct Container {
    std::vector<Value> items;  // Dict: key, value, key, value, ...
    Value replacement;         // what the memo holds once freed (Frame/Stack); None = Dead
    int64_t memo = -1;         // latest memo slot holding this container
    uint32_t generation = 0;
    uint32_t sink = 0;  // for the handler (0 = none)
    Kind kind = Kind::List;
    bool live = false;
    bool folded = false;  // the handler keeps the items elsewhere (see onPlainBatch)
    bool shared = false;  // referenced from another container or DUP'ed: a POP cannot free it
};

struct Limits {
    uint64_t max_string = 64ull << 20;          // bytes in one string
    uint64_t max_memo = 64ull << 20;            // memo slots
    uint64_t max_stack = 4ull << 20;            // values on the stack
    uint64_t max_marks = 1ull << 16;            // nesting of MARKs (depth)
    uint64_t max_live_containers = 4ull << 20;  // lists/dicts/tuples alive at once
    uint64_t max_live_items = 32ull << 20;      // values held by live containers

    // The limits for an input of `bytes`: a hostile file must not make us
    // hold many times its size, and a real snapshot of any size must read.
    // Live items are held to the input's size (real snapshots keep only the
    // current entry alive). Memo slots (16 bytes each) grow with the input,
    // one per 16 bytes of it at most: a 10 GB snapshot writes about 100
    // million (ten per kilobyte), past the 64 Mi floor that stopped it.
    static Limits forInput(uint64_t bytes);
};

class Machine;

// What a handler did with a dict the machine read without building it.
enum class FlatDict : uint8_t {
    NotTaken,  // nothing happened: the machine builds the dict as usual
    Taken,     // converted
    Failed,    // after Machine::fail()
};

class Handler {
public:
    virtual ~Handler() = default;
    // `item` is about to be appended to list `list`. The handler may rewrite it,
    // or clear `keep` when it consumed the item. Return false after m.fail().
    virtual bool onAppend(Machine& m, uint32_t list, Value& item, bool& keep) = 0;
    // After each APPEND/APPENDS/LIST: the batch's items are off the stack, so
    // containers the handler consumed can be freed now.
    virtual void onBatchEnd(Machine& m) = 0;
    // A whole batch of plain values (no containers) for an empty list. The
    // handler may keep them in its own form (a frames list as a StackId: the
    // hot path of every snapshot) and set `consumed`; it then marks the list
    // `folded` and must give the items back in unfold() if more are appended.
    virtual bool onPlainBatch(Machine& m, uint32_t list, std::span<const Value> items,
                              bool& consumed) {
        (void)m, (void)list, (void)items, (void)consumed;
        return true;
    }
    virtual void unfold(Machine& m, uint32_t list) { (void)m, (void)list; }
    // True when what onPlainBatch folds a batch into depends only on the
    // batch's values. The machine may then fold a later batch of the same
    // memo references (MARK, BINGET..., APPENDS with the same bytes) into
    // the same replacement without showing it to the handler again.
    virtual bool cachesPlainBatches() const { return false; }
    // Whether a dict of plain values about to be appended to `list` may be
    // read without building it: in one pass over its bytes, its memo
    // references resolved, a frames list in it taken from the run cache
    // (the hot path of a snapshot: every trace entry after a list's first
    // batch). Items that wait above the batch's MARK are appended first, so
    // that items reach the handler in the order they come.
    virtual bool takesFlatDicts(Machine& m, uint32_t list) {
        (void)m, (void)list;
        return false;
    }
    // Such a dict's items (key, value, ...; no container among them): what
    // onAppend would have seen in the dict. On Taken, `memo` is what the
    // dict's memo slot holds from then on, as if it had been built and freed
    // (or Pending, for the handler to resolve where it is appended again).
    virtual FlatDict onFlatDict(Machine& m, uint32_t list, std::span<const Value> items,
                                Value& memo) {
        (void)m, (void)list, (void)items, (void)memo;
        return FlatDict::NotTaken;
    }
    // Every few MB: `reached` of `total` input bytes are read (to reserve
    // what the rest will need, see projected_reserve.h).
    virtual void onProgress(uint64_t reached, uint64_t total) { (void)reached, (void)total; }
    // Before the machine records an error of its own, and before run()
    // returns however it ends: a handler that maps what it took on another
    // thread (onFlatDict's Pending) finishes it there, and reports the first
    // error of it through m.failAt(), which then comes before a later one.
    virtual void settle(Machine& m) { (void)m; }
};

class Machine {
public:
    Machine(std::span<const std::byte> input, Handler& handler, Limits limits = {});

    // Runs to STOP and returns the top-level value (containers stay alive).
    // `consumed` (optional) is called every few MB with the input offset reached.
    Result<Value> run(const TaskContext& ctx, const std::function<void(uint64_t)>& consumed = {});

    std::string_view str(const Value& v) const {
        return {reinterpret_cast<const char*>(data_) + v.bits, v.aux};
    }
    // nullptr unless v refers to a container that is still alive.
    Container* deref(const Value& v) {
        if (v.tag != Tag::Ref || v.bits >= containers_.size()) return nullptr;
        Container& c = containers_[v.bits];
        return c.live && c.generation == v.aux ? &c : nullptr;
    }
    Container& at(uint32_t index) { return containers_[index]; }
    // Frees a container; its memo slot then holds c.replacement (or Dead).
    void release(uint32_t index);

    bool fail(std::string message);  // records the first error; returns false
    // The same for an error found at `offset`, earlier than the opcode read now.
    bool failAt(std::string message, uint64_t offset);
    uint64_t offset() const { return op_offset_; }
    const std::string& error() const { return error_; }
    int protocol() const { return protocol_; }

private:
    Result<Value> runToStop(const TaskContext& ctx, const std::function<void(uint64_t)>& consumed);
    bool step(uint8_t op);
    bool stepHot(uint8_t op);
    bool pushMark();
    bool setItems();
    bool needSlow(uint64_t n);
    bool need(uint64_t n) { return size_ - pos_ >= n || needSlow(n); }
    [[gnu::always_inline]] bool push(Value v) {
        if (stack_.size() >= limits_.max_stack) return fail("stack deeper than the limit");
        stack_.push_back(v);
        return true;
    }
    bool popMark(size_t& mark);
    Value newContainer(Kind kind);
    bool appendTo(uint32_t list, Value item);
    bool addItem(Container& c, Value v) {
        if (++live_items_ > limits_.max_live_items) return fail("more live objects than the limit");
        markShared(v);
        c.items.push_back(v);
        return true;
    }
    void markShared(const Value& v) {
        if (Container* c = deref(v)) c->shared = true;
    }
    // A container popped off the stack that nothing else refers to is garbage.
    void dropPopped(const Value& v) {
        if (Container* c = deref(v); c && !c->shared && c->memo < 0) release(uint32_t(v.bits));
    }
    bool appendAll(uint32_t list, size_t from);
    void unfold(uint32_t list);
    bool memoPut(uint64_t index);
    bool memoMissing(uint64_t index);
    bool valueRun(uint8_t op);
    FlatDict flatDict();
    void foldCachedRun();
    bool pushString(Tag tag, uint64_t length);
    bool pushLong(uint64_t nbytes);
    bool buildTuple(size_t from);
    Container* containerAt(size_t stack_index, Kind kind, const char* what);

    const uint8_t* data_;
    uint64_t size_;
    uint64_t pos_ = 0;
    uint64_t op_offset_ = 0;
    Handler& handler_;
    Limits limits_;
    int protocol_ = 0;
    bool stopped_ = false;
    std::string error_;

    ValueStack stack_;
    std::vector<size_t> marks_;
    std::vector<Value> memo_;
    PageWarmer memo_warmer_;  // declared after memo_: stops before it is freed
    std::vector<Container> containers_;
    std::vector<uint32_t> free_;
    uint64_t live_containers_ = 0;
    uint64_t live_items_ = 0;
    uint64_t memo_gaps_ = 0;  // slots skipped by memo stores so far
    uint64_t ops_ = 0;

    // flatDict's room for a dict's items and memo stores, kept from one dict
    // to the next (initialising them per dict was a sixth of its cost).
    std::array<Value, 32> flat_items_;
    std::array<Value, 8> flat_stores_;
    // Batches of memo references folded before (see Handler::cachesPlainBatches).
    MemoRunCache run_cache_;
    bool cache_runs_ = false;
    // The run after the latest MARK that missed the cache: cached when the
    // APPENDS at `end` folds it.
    struct PendingRun {
        uint64_t start = 0, end = 0, values = 0, hash = 0;
        bool active = false;
    } pending_run_;
};

}  // namespace memscope::pickle
