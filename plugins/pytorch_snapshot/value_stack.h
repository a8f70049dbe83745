#pragma once
// The unpickler's value stack: a vector's interface over storage whose end the
// hot loops may hold in a register. std::vector's end pointer lives in memory
// that every store of a Value might alias, so a loop pushing through it
// reloads and rewrites it per value; reserveFor() plus a raw cursor does not.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

#include "pickle_value.h"

namespace memscope::pickle {

class ValueStack {
public:
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Value* data() { return data_.get(); }
    const Value* data() const { return data_.get(); }
    Value* begin() { return data_.get(); }
    Value* end() { return data_.get() + size_; }
    Value& operator[](size_t i) { return data_[i]; }
    const Value& operator[](size_t i) const { return data_[i]; }
    Value& back() { return data_[size_ - 1]; }
    void pop_back() { --size_; }
    // Only ever shrinks: the machine drops what an opcode consumed.
    void resize(size_t n) { size_ = std::min(n, size_); }

    [[gnu::always_inline]] void push_back(const Value& v) {
        if (size_ == capacity_) grow(size_ + 1);
        data_[size_++] = v;
    }
    // Room for n more values; returns where the next one goes.
    Value* reserveFor(size_t n) {
        if (capacity_ - size_ < n) grow(size_ + n);
        return data_.get() + size_;
    }
    // After writing through reserveFor()'s pointer: the new end.
    void setEnd(const Value* end) { size_ = size_t(end - data_.get()); }

private:
    [[gnu::noinline]] void grow(size_t need) {
        const size_t capacity = std::max<size_t>({need, capacity_ * 2, 1024});
        std::unique_ptr<Value[]> bigger(new Value[capacity]);
        if (size_)
            std::memcpy(static_cast<void*>(bigger.get()), data_.get(), size_ * sizeof(Value));
        data_ = std::move(bigger);
        capacity_ = capacity;
    }

    std::unique_ptr<Value[]> data_;
    size_t size_ = 0;
    size_t capacity_ = 0;
};

}  // namespace memscope::pickle
