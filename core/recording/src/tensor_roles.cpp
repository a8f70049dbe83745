#include "memscope/recording/tensor_roles.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace memscope {
namespace {

int64_t saturatingAdd(int64_t a, int64_t b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
    return sum;
}

// Whether [start, start + size) holds the label's [address, address + bytes)
// (without overflow on hostile numbers).
bool holds(uint64_t start, uint64_t size, const HookTensorRole& label) {
    if (label.address < start) return false;
    const uint64_t offset = label.address - start;
    return offset < size && label.bytes <= size - offset;
}

struct Live {
    uint64_t size = 0;
    uint64_t alloc = 0;     // its Alloc event
    bool labelled = false;  // by a label here: its frees take the category
};

// The labels of one device and its allocations alive at the moment.
struct DeviceState {
    std::map<uint64_t, Live> live;  // by address
    // Labels that found no allocation yet, by address: within the slack
    // (index into Labeller::pending_), and past it (waiting for the free of an
    // allocation from before the trace).
    std::multimap<uint64_t, size_t> soon;
    std::multimap<uint64_t, HookTensorRole> before_trace;
};

class Labeller {
public:
    Labeller(Trace& trace, TensorRoleStats& stats) : trace_(trace), stats_(stats) {}

    void addDevice(int16_t device) {
        if (!state(device)) devices_.push_back({device, DeviceState{}});
    }

    // A label, once every event up to its time has been applied.
    void place(const HookTensorRole& label) {
        DeviceState* d = state(label.device);
        if (!d) return;
        auto it = d->live.upper_bound(label.address);
        if (it != d->live.begin()) {
            --it;
            if (holds(it->first, it->second.size, label)) {
                assign(it->second, label.role);
                return;
            }
        }
        pending_.push_back({label, false, d->soon.end()});
        pending_.back().where = d->soon.emplace(label.address, pending_.size() - 1);
    }

    void apply(uint64_t index) {
        Event& e = trace_.events[index];
        expire(e.time);
        DeviceState* d = state(e.device);
        if (!d) return;
        switch (e.kind) {
            case EventKind::Alloc: {
                Live& live = d->live[e.address];
                live = {e.size, index, false};
                takeSoon(*d, e, live);
                break;
            }
            case EventKind::FreeRequested:
            case EventKind::FreeCompleted: {
                auto it = d->live.find(e.address);
                if (it == d->live.end()) {
                    if (e.kind == EventKind::FreeCompleted) labelBeforeTrace(*d, e);
                    break;
                }
                if (it->second.labelled && e.category == Category::Unknown)
                    e.category = trace_.events[it->second.alloc].category;
                if (e.kind == EventKind::FreeCompleted) d->live.erase(it);
                break;
            }
            default:
                break;
        }
    }

    void finish() {
        expire(INT64_MAX);
        for (size_t i = head_; i < pending_.size(); ++i) stats_.unplaced += !pending_[i].done;
        for (auto& [device, d] : devices_) stats_.unplaced += d.before_trace.size();
    }

private:
    struct PendingLabel {
        HookTensorRole label;
        bool done = false;
        std::multimap<uint64_t, size_t>::iterator where;
    };

    DeviceState* state(int16_t device) {
        for (auto& [d, s] : devices_)
            if (d == device) return &s;
        return nullptr;
    }

    void assign(Live& live, Category role) {
        Event& alloc = trace_.events[live.alloc];
        if (alloc.category == Category::Unknown) {
            alloc.category = role;
            live.labelled = true;
            ++stats_.allocations;
        } else if (alloc.category != role) {
            ++stats_.conflicting;
        }
    }

    // An allocation born just after labels that found nothing (clock skew).
    void takeSoon(DeviceState& d, const Event& e, Live& live) {
        for (auto it = d.soon.lower_bound(e.address);
             it != d.soon.end() && it->first - e.address < e.size;) {
            PendingLabel& p = pending_[it->second];
            if (!holds(e.address, e.size, p.label)) {
                ++it;
                continue;
            }
            assign(live, p.label.role);
            p.done = true;
            it = d.soon.erase(it);
        }
    }

    // Labels older than the slack stop waiting for an allocation: they may
    // be of one made before the trace, whose free is still to come.
    void expire(int64_t now) {
        for (; head_ < pending_.size(); ++head_) {
            PendingLabel& p = pending_[head_];
            if (saturatingAdd(p.label.time_ns, kTensorRoleSlackNs) >= now) break;
            if (p.done) continue;
            DeviceState* d = state(p.label.device);
            d->soon.erase(p.where);
            d->before_trace.emplace(p.label.address, p.label);
            p.done = true;
        }
    }

    // A free without alloc: an allocation made before the trace began. The
    // labels that fell inside it are its.
    void labelBeforeTrace(DeviceState& d, Event& e) {
        auto it = d.before_trace.lower_bound(e.address);
        bool first = true;
        while (it != d.before_trace.end() && it->first - e.address < e.size) {
            const HookTensorRole& label = it->second;
            if (!holds(e.address, e.size, label)) {
                ++it;
                continue;
            }
            if (first && e.category == Category::Unknown) {
                e.category = label.role;
                ++stats_.allocations;
            } else if (e.category != label.role) {
                ++stats_.conflicting;
            }
            first = false;
            it = d.before_trace.erase(it);
        }
    }

    Trace& trace_;
    TensorRoleStats& stats_;
    std::vector<std::pair<int16_t, DeviceState>> devices_;
    std::vector<PendingLabel> pending_;  // in the order placed (by time)
    size_t head_ = 0;                    // pending_ before it are done or expired
};

}  // namespace

std::optional<Category> tensorRoleFromString(std::string_view name) {
    if (name == "parameter") return Category::Parameter;
    if (name == "gradient") return Category::Gradient;
    if (name == "optimizer_state") return Category::OptimizerState;
    if (name == "input") return Category::Input;
    return std::nullopt;
}

TensorRoleStats labelTensorRoles(Trace& trace, std::vector<HookTensorRole> labels) {
    TensorRoleStats stats;
    stats.labels = labels.size();
    if (labels.empty()) return stats;
    std::stable_sort(
        labels.begin(), labels.end(),
        [](const HookTensorRole& a, const HookTensorRole& b) { return a.time_ns < b.time_ns; });
    Labeller labeller(trace, stats);
    for (const HookTensorRole& l : labels) labeller.addDevice(l.device);
    size_t next = 0;
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        // A label sees every event up to its time.
        const int64_t t = trace.events[i].time;
        for (; next < labels.size() && labels[next].time_ns < t; ++next)
            labeller.place(labels[next]);
        labeller.apply(i);
    }
    for (; next < labels.size(); ++next) labeller.place(labels[next]);
    labeller.finish();
    return stats;
}

}  // namespace memscope
