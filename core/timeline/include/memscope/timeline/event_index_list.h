#pragma once
// Trace::events indexes in the order one device's events are walked (time
// order). Nearly every trace has one device, whose events the file already
// holds in time order: the list is then every index, 0 to n - 1, and keeps no
// vector. (The 4.6 million events of the 1 GB churn snapshot: 37 MB that an
// open neither writes nor keeps.)

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

namespace memscope {

class EventIndexList {
public:
    EventIndexList() = default;
    // These indexes, in this order.
    explicit EventIndexList(std::vector<uint64_t> indexes)
        : indexes_(std::move(indexes)), size_(indexes_.size()) {}
    // Every index of `count` events, in order: 0, 1, ..., count - 1.
    static EventIndexList all(size_t count) {
        EventIndexList list;
        list.size_ = count;
        return list;
    }

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // Every index in order, with no vector behind the list.
    bool isAll() const { return indexes_.empty(); }
    uint64_t operator[](size_t i) const { return indexes_.empty() ? uint64_t(i) : indexes_[i]; }
    uint64_t front() const { return (*this)[0]; }
    uint64_t back() const { return (*this)[size_ - 1]; }
    size_t memoryBytes() const { return indexes_.capacity() * sizeof(uint64_t); }
    // Whether every index is below `events` (a list of another trace, or of
    // this one before events were removed, is not): O(1) for every index.
    bool within(size_t events) const;
    std::vector<uint64_t> toVector() const;

    // Random access over the indexes, which it yields by value.
    class Iterator {
    public:
        using iterator_category = std::random_access_iterator_tag;
        using value_type = uint64_t;
        using difference_type = std::ptrdiff_t;
        using reference = uint64_t;
        using pointer = void;

        Iterator() = default;
        Iterator(const EventIndexList* list, size_t at) : list_(list), at_(at) {}
        uint64_t operator*() const { return (*list_)[at_]; }
        uint64_t operator[](difference_type n) const {
            return (*list_)[size_t(difference_type(at_) + n)];
        }
        Iterator& operator++() {
            ++at_;
            return *this;
        }
        Iterator operator++(int) { return {list_, at_++}; }
        Iterator& operator--() {
            --at_;
            return *this;
        }
        Iterator operator--(int) { return {list_, at_--}; }
        Iterator& operator+=(difference_type n) {
            at_ = size_t(difference_type(at_) + n);
            return *this;
        }
        Iterator& operator-=(difference_type n) { return *this += -n; }
        friend Iterator operator+(Iterator it, difference_type n) { return it += n; }
        friend Iterator operator+(difference_type n, Iterator it) { return it += n; }
        friend Iterator operator-(Iterator it, difference_type n) { return it -= n; }
        friend difference_type operator-(const Iterator& a, const Iterator& b) {
            return difference_type(a.at_) - difference_type(b.at_);
        }
        friend bool operator==(const Iterator& a, const Iterator& b) { return a.at_ == b.at_; }
        friend auto operator<=>(const Iterator& a, const Iterator& b) { return a.at_ <=> b.at_; }

    private:
        const EventIndexList* list_ = nullptr;
        size_t at_ = 0;
    };

    Iterator begin() const { return {this, 0}; }
    Iterator end() const { return {this, size_}; }

    // The same indexes in the same order, however each is held.
    friend bool operator==(const EventIndexList& a, const EventIndexList& b);

private:
    std::vector<uint64_t> indexes_;
    size_t size_ = 0;
};

static_assert(std::random_access_iterator<EventIndexList::Iterator>);

}  // namespace memscope
