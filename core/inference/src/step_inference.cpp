#include "step_inference.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <span>

#include "memscope/base/parallel_for.h"
#include "memscope/model/phases.h"
#include "memscope/timeline/timeline.h"
#include "training_activity.h"

namespace memscope::detail {
namespace {

constexpr size_t kWindow = 8;
constexpr uint64_t kPrime = 0x100000001b3ull;

uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

// What repeats from one step to the next: the event's kind, size and stack.
uint64_t token(const Event& e) {
    const bool memory = e.kind == EventKind::Alloc || e.kind == EventKind::FreeCompleted;
    return mix((uint64_t(e.kind) << 56) ^ (memory ? e.size : 0) ^
               (uint64_t(e.stack.value) << 20) * 0x9e3779b97f4a7c15ull);
}

struct KeyAt {
    uint64_t key;
    uint32_t at;
    bool operator<(const KeyAt& o) const { return key != o.key ? key < o.key : at < o.at; }
};

// The key of every window of kWindow events, by position: the rolling hash
// of their tokens. A window's key depends on its own events only (the
// rolling update is exact in modular arithmetic), so the positions are cut
// into one range per thread, each starting its own hash.
std::unique_ptr<uint64_t[]> windowKeys(const Trace& trace, const EventIndexList& order,
                                       size_t windows, unsigned threads) {
    uint64_t top = 1;
    for (size_t j = 1; j < kWindow; ++j) top *= kPrime;
    // Not value-initialized: every key is written below, on the threads
    // that then own their pages.
    std::unique_ptr<uint64_t[]> keys(new uint64_t[windows]);
    parallelFor(threads, threads, [&](size_t part) {
        const size_t begin = windows * part / threads, end = windows * (part + 1) / threads;
        uint64_t h = 0;
        uint64_t tokens[kWindow] = {};
        for (size_t i = begin; i < end + kWindow - 1; ++i) {
            const uint64_t t = token(trace.events[order[i]]);
            if (i >= begin + kWindow) h -= tokens[i % kWindow] * top;
            tokens[i % kWindow] = t;
            h = h * kPrime + t;
            if (i + 1 >= begin + kWindow) keys[i + 1 - kWindow] = h;
        }
    });
    return keys;
}

// The windows as (key, position), sorted as std::sort would: scattered into
// 65,536 buckets by their keys' top 16 bits (the hashes are uniform, so each
// holds a few dozen), then each bucket sorted in cache. Every step runs on
// `threads` threads: a range of the keys each for the counting and the
// scatter (each thread's share of a bucket follows the earlier threads', so
// the scatter keeps position order), a range of buckets each for the sorts.
// The single-threaded sort of a 1 GB snapshot's 4.5 M windows was the longest
// part of inference, while the other core had finished pairing lifetimes.
std::unique_ptr<KeyAt[]> sortedKeys(const uint64_t* keys, size_t n, unsigned threads) {
    constexpr int kBits = 16;
    constexpr size_t kBuckets = size_t(1) << kBits;
    const auto bucketOf = [](uint64_t key) { return size_t(key >> (64 - kBits)); };
    std::vector<std::vector<uint32_t>> counts(threads, std::vector<uint32_t>(kBuckets, 0));
    parallelFor(threads, threads, [&](size_t part) {
        for (size_t i = n * part / threads; i < n * (part + 1) / threads; ++i)
            ++counts[part][bucketOf(keys[i])];
    });
    // counts[part][b] becomes where that thread's keys of bucket b go.
    std::vector<uint32_t> bucket_start(kBuckets + 1, 0);
    uint32_t at = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
        bucket_start[b] = at;
        for (unsigned part = 0; part < threads; ++part) {
            const uint32_t c = counts[part][b];
            counts[part][b] = at;
            at += c;
        }
    }
    bucket_start[kBuckets] = at;
    std::unique_ptr<KeyAt[]> sorted(new KeyAt[n]);
    parallelFor(threads, threads, [&](size_t part) {
        std::vector<uint32_t>& next = counts[part];
        for (size_t i = n * part / threads; i < n * (part + 1) / threads; ++i)
            sorted[next[bucketOf(keys[i])]++] = {keys[i], uint32_t(i)};
    });
    parallelFor(threads, threads, [&](size_t part) {
        for (size_t b = kBuckets * part / threads; b < kBuckets * (part + 1) / threads; ++b)
            if (bucket_start[b + 1] - bucket_start[b] > 1)
                std::sort(sorted.get() + bucket_start[b], sorted.get() + bucket_start[b + 1]);
    });
    return sorted;
}

// Below this many windows one thread does it faster than two start.
constexpr size_t kParallelWindows = size_t(1) << 18;

}  // namespace

std::vector<Window> findRepeatedSteps(const Trace& trace, const EventIndexList& order,
                                      const TaskContext& ctx) {
    const size_t n = order.size();
    if (n < 4 * kWindow || n > UINT32_MAX) return {};
    const size_t windows = n - kWindow + 1;
    const unsigned threads = windows >= kParallelWindows ? std::min(hardwareThreads(), 8u) : 1;
    // By position, for scoring a segmentation; sorted by key, for grouping.
    const std::unique_ptr<uint64_t[]> key_at = windowKeys(trace, order, windows, threads);
    if (ctx.cancelled()) return {};
    const std::unique_ptr<KeyAt[]> sorted = sortedKeys(key_at.get(), windows, threads);
    if (ctx.cancelled()) return {};
    const std::span<const KeyAt> keys(sorted.get(), windows);

    // Keys that recur evenly across most of the trace, grouped by how often.
    struct Group {
        size_t support = 0;
        uint32_t earliest_key = 0;  // index into keys of the group's earliest first occurrence
        uint32_t earliest_at = UINT32_MAX;
        uint32_t latest_end = 0;
    };
    std::map<size_t, Group> groups;
    for (size_t i = 0; i < keys.size();) {
        size_t j = i + 1;
        while (j < keys.size() && keys[j].key == keys[i].key) ++j;
        const size_t count = j - i;
        if (count >= 2) {
            uint32_t min_gap = UINT32_MAX, max_gap = 0;
            for (size_t k = i + 1; k < j; ++k) {
                const uint32_t gap = keys[k].at - keys[k - 1].at;
                min_gap = std::min(min_gap, gap);
                max_gap = std::max(max_gap, gap);
            }
            const double span = double(keys[j - 1].at - keys[i].at);
            const bool even = min_gap >= kWindow && 1.5 * min_gap >= max_gap;
            const bool covering = span * double(count) / double(count - 1) >= 0.5 * double(n);
            if (even && covering) {
                Group& g = groups[count];
                ++g.support;
                if (keys[i].at < g.earliest_at) {
                    g.earliest_at = keys[i].at;
                    g.earliest_key = uint32_t(i);
                }
                g.latest_end = std::max(g.latest_end, uint32_t(keys[j - 1].at + kWindow));
            }
        }
        i = j;
    }
    // Each candidate count cuts the trace into steps at its earliest key's
    // occurrences; the cut under which most windows recur at the same place
    // in the next step wins. Layers repeat too, but a layer's windows do not
    // recur one layer later across forward, backward and the optimizer; and a
    // first step that differs (optimizer state created in it) still matches
    // where it does not differ.
    auto cut = [&](size_t count) {
        const Group& g = groups[count];
        std::vector<Window> steps;
        for (size_t k = 0; k < count; ++k) {
            const size_t begin = keys[g.earliest_key + k].at;
            const size_t end =
                k + 1 < count ? keys[g.earliest_key + k + 1].at : std::min<size_t>(n, g.latest_end);
            if (end > begin) steps.push_back({begin, end});
        }
        return steps;
    };
    auto score = [&](const std::vector<Window>& steps) {
        size_t matched = 0;
        for (size_t k = 0; k + 1 < steps.size(); ++k) {
            const size_t shift = steps[k + 1].begin - steps[k].begin;
            for (size_t p = steps[k].begin; p < steps[k].end && p + shift < windows; ++p)
                matched += key_at[p] == key_at[p + shift];
        }
        return matched;
    };
    // Scoring costs a pass over the trace per count: only the counts with the
    // most support, so that a pathological trace cannot make it quadratic.
    std::vector<std::pair<size_t, size_t>> candidates;  // (support, count)
    for (const auto& [count, g] : groups)
        if (double(g.support) >= 0.01 * double(n) / double(count) && g.support >= 8)
            candidates.push_back({g.support, count});
    constexpr size_t kMaxCandidates = 16;
    if (candidates.size() > kMaxCandidates) {
        std::partial_sort(candidates.begin(), candidates.begin() + kMaxCandidates, candidates.end(),
                          std::greater<>());
        candidates.resize(kMaxCandidates);
    }
    std::map<size_t, size_t> scores;  // count -> score
    size_t best = 0;
    for (const auto& [support, count] : candidates) {
        if (ctx.cancelled()) return {};
        const std::vector<Window> steps = cut(count);
        if (steps.size() < 2) continue;
        scores[count] = score(steps);
        if (best == 0 || scores[count] > scores[best]) best = count;
    }
    if (best == 0) return {};
    // Uniform layers can match better one layer on than a step later. A
    // count the winner is a multiple of, scoring at least a quarter as well
    // (a first step that creates the optimizer state matches the next one
    // only in part), is the outer period: the step.
    size_t step = best;
    for (const auto& [count, sc] : scores)
        if (count < best && best % count == 0 && 4 * sc >= scores[best] &&
            (step == best || sc > scores[step]))
            step = count;
    return cut(step);
}

namespace {

struct Sub {
    size_t begin = 0, end = 0;  // positions, [begin, end)
    PhaseKind kind = PhaseKind::Forward;
};

// Forward, backward and optimizer of one step from frames: the span of the
// events whose stacks say so. Empty when too few events carry evidence.
std::vector<Sub> fromFrames(const Trace& trace, const EventIndexList& order, Window w,
                            TrainingActivity& activity) {
    size_t evidence = 0;
    constexpr size_t kNone = SIZE_MAX;
    size_t first[3] = {kNone, kNone, kNone}, last[3] = {0, 0, 0};
    for (size_t p = w.begin; p < w.end; ++p) {
        int slot = -1;
        switch (activity.ofStack(trace.events[order[p]].stack)) {
            case FrameActivity::Forward:
                slot = 0;
                break;
            case FrameActivity::Backward:
                slot = 1;
                break;
            case FrameActivity::Optimizer:
                slot = 2;
                break;
            default:
                break;
        }
        if (slot < 0) continue;
        ++evidence;
        if (first[slot] == kNone) first[slot] = p;
        last[slot] = p;
    }
    if (evidence * 4 < w.end - w.begin) return {};
    std::vector<Sub> out;
    constexpr PhaseKind kinds[3] = {PhaseKind::Forward, PhaseKind::Backward, PhaseKind::Optimizer};
    for (int s = 0; s < 3; ++s) {
        if (first[s] == kNone) continue;
        size_t end = last[s] + 1;
        // Forward ends where backward begins (a recompute's forward frames sit
        // inside backward and count there).
        if (s == 0 && first[1] != kNone && first[1] > first[0]) end = std::min(end, first[1]);
        if (s == 1 && first[2] != kNone && first[2] > first[1]) end = std::min(end, first[2]);
        out.push_back({first[s], end, kinds[s]});
    }
    // No optimizer frames (a user's optimizer, in their own file): what the
    // step allocates after its backward is its optimizer's.
    if (first[2] == kNone && first[1] != kNone) {
        bool allocates = false;
        for (size_t p = last[1] + 1; p < w.end && !allocates; ++p)
            allocates = trace.events[order[p]].kind == EventKind::Alloc;
        if (allocates) out.push_back({last[1] + 1, w.end, PhaseKind::Optimizer});
    }
    return out;
}

// From lifetimes: bytes born and freed inside the step peak where forward
// turns into backward; backward ends with the last free of what forward
// saved.
std::vector<Sub> fromLifetimes(const Trace& trace, const EventIndexList& order, Window w,
                               const std::vector<uint64_t>& free_of,
                               const std::vector<int64_t>& position, bool optimizer_in_window) {
    const size_t len = w.end - w.begin;
    // Without the optimizer in the window (it was recorded after it), only
    // what is freed past the window's end is left out.
    const size_t tail = optimizer_in_window ? len / 10 : 0;
    // Doubles: sums of hostile sizes cannot overflow.
    std::vector<double> delta(len + 1, 0);
    struct Life {
        size_t born, freed;  // positions
    };
    std::vector<Life> lives;
    for (size_t p = w.begin; p < w.end; ++p) {
        const uint64_t ti = order[p];
        if (trace.events[ti].kind != EventKind::Alloc || free_of[ti] == kNoEvent) continue;
        const int64_t q = position[free_of[ti]];
        // What the step's last tenth frees (gradients and inputs at the
        // optimizer's zero_grad) was not saved by forward: left out, or its
        // build-up through backward would outweigh forward's peak.
        if (q < 0 || size_t(q) >= w.end - tail || size_t(q) <= p) continue;
        const auto size = double(trace.events[ti].size);
        delta[p - w.begin] += size;
        delta[size_t(q) - w.begin] -= size;
        lives.push_back({p, size_t(q)});
    }
    if (lives.empty()) return {};
    double live = 0, best = -1;
    size_t turn = w.begin;
    for (size_t i = 0; i < len; ++i) {
        live += delta[i];
        if (live > best) {
            best = live;
            turn = w.begin + i;
        }
    }
    // Where checkpointing makes backward's recompute outweigh forward, the
    // peak falls inside backward; backward has begun by the first free of an
    // old allocation (forward frees only what it made moments before).
    {
        std::vector<size_t> ages;
        for (const Life& l : lives) ages.push_back(l.freed - l.born);
        std::nth_element(ages.begin(), ages.begin() + long(ages.size() / 2), ages.end());
        const size_t old_age = std::max<size_t>(16, 4 * ages[ages.size() / 2]);
        size_t first_old = SIZE_MAX;
        for (const Life& l : lives)
            if (l.freed - l.born >= old_age) first_old = std::min(first_old, l.freed);
        // ... unless that free comes so early that little of the peak was
        // alive yet (a forward that frees an early input of its own).
        if (first_old != SIZE_MAX && first_old > w.begin && first_old - 1 < turn) {
            double at = 0;
            for (size_t i = 0; i + w.begin < first_old; ++i) at += delta[i];
            if (at >= best / 2) turn = first_old - 1;
        }
    }
    // Backward ends with the last free of what was alive at the turn (what the
    // step's tail frees, inputs and gradients, is not among `lives`); forward
    // began with the first birth among them.
    size_t backward_end = 0, forward_begin = turn;
    for (const Life& l : lives) {
        if (l.born > turn || l.freed <= turn) continue;
        backward_end = std::max(backward_end, l.freed + 1);
        forward_begin = std::min(forward_begin, l.born);
    }
    if (backward_end == 0) return {};
    std::vector<Sub> out;
    out.push_back({forward_begin, turn + 1, PhaseKind::Forward});
    // A recorded optimizer follows the window: backward runs up to it.
    if (!optimizer_in_window) backward_end = w.end;
    if (backward_end > turn + 1) out.push_back({turn + 1, backward_end, PhaseKind::Backward});
    if (backward_end < w.end) out.push_back({backward_end, w.end, PhaseKind::Optimizer});
    return out;
}

// Runs of backward that replay forward's allocations (the same sizes and
// stacks, kRecomputeRun in a row): a checkpointed region recomputed.
constexpr size_t kRecomputeRun = 6;

std::vector<Window> recomputes(const Trace& trace, const EventIndexList& order, Window forward,
                               Window backward) {
    auto allocsIn = [&](Window w) {
        std::vector<size_t> at;
        for (size_t p = w.begin; p < w.end; ++p)
            if (trace.events[order[p]].kind == EventKind::Alloc) at.push_back(p);
        return at;
    };
    auto runHash = [&](const std::vector<size_t>& at, size_t i) {
        uint64_t h = 0;
        for (size_t j = 0; j < kRecomputeRun; ++j) {
            const Event& e = trace.events[order[at[i + j]]];
            h = h * kPrime + mix(e.size ^ (uint64_t(e.stack.value) << 40));
        }
        return h;
    };
    const std::vector<size_t> fwd = allocsIn(forward), bwd = allocsIn(backward);
    if (fwd.size() < kRecomputeRun || bwd.size() < kRecomputeRun) return {};
    std::vector<uint64_t> seen;
    for (size_t i = 0; i + kRecomputeRun <= fwd.size(); ++i) seen.push_back(runHash(fwd, i));
    std::sort(seen.begin(), seen.end());
    std::vector<uint8_t> replayed(bwd.size(), 0);
    for (size_t i = 0; i + kRecomputeRun <= bwd.size(); ++i)
        if (std::binary_search(seen.begin(), seen.end(), runHash(bwd, i)))
            std::fill_n(replayed.begin() + long(i), kRecomputeRun, uint8_t(1));
    std::vector<Window> out;
    for (size_t i = 0; i < bwd.size();) {
        if (!replayed[i]) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < bwd.size() && replayed[j]) ++j;
        out.push_back({bwd[i], bwd[j - 1] + 1});
        i = j;
    }
    return out;
}

int64_t timeAt(const Trace& trace, const EventIndexList& order, size_t p) {
    if (p < order.size()) return trace.events[order[p]].time;
    return order.empty() ? 0 : trace.events[order.back()].time + 1;
}

std::string_view nameOf(PhaseKind kind) {
    switch (kind) {
        case PhaseKind::Forward:
            return "forward";
        case PhaseKind::Backward:
            return "backward";
        default:
            return "optimizer";
    }
}

}  // namespace

std::vector<StepWindow> unanchored(const std::vector<Window>& steps) {
    std::vector<StepWindow> out;
    for (const Window& w : steps) out.push_back({w, w.end, false});
    return out;
}

std::vector<StepWindow> stepsFromOptimizerRanges(const Trace& trace, const EventIndexList& order,
                                                 int16_t device) {
    const size_t n = order.size();
    // Positions of the events of each recorded optimizer step, by start.
    std::vector<Window> ranges;
    for (const Phase& p : trace.phases) {
        if (p.inferred || p.kind != PhaseKind::Optimizer || !phaseOnDevice(p, device) ||
            !isOptimizerStepName(trace.string(p.name)))
            continue;
        const auto earlier = [&](uint64_t ti, int64_t t) { return trace.events[ti].time < t; };
        const auto later = [&](int64_t t, uint64_t ti) { return t < trace.events[ti].time; };
        const auto first = std::lower_bound(order.begin(), order.end(), p.start, earlier);
        const auto past = std::upper_bound(first, order.end(), std::max(p.start, p.end), later);
        ranges.push_back({size_t(first - order.begin()), size_t(past - order.begin())});
    }
    if (ranges.empty() || n == 0) return {};
    std::sort(ranges.begin(), ranges.end(),
              [](const Window& a, const Window& b) { return a.begin < b.begin; });
    // Live bytes after each position (relative: what was alive before the
    // trace is not counted), and the rise above the start of [from, to).
    std::vector<double> live(n + 1, 0);
    for (size_t p = 0; p < n; ++p) {
        const Event& e = trace.events[order[p]];
        const double size = double(e.size);
        live[p + 1] = live[p] + (e.kind == EventKind::Alloc           ? size
                                 : e.kind == EventKind::FreeCompleted ? -size
                                                                      : 0.0);
    }
    // The largest climb from a trough: a zero_grad after the step frees the
    // gradients before the forward rises again, often below where it began.
    auto rise = [&](size_t from, size_t to) {
        double low = live[from], climb = 0;
        for (size_t p = from; p < to; ++p) {
            low = std::min(low, live[p + 1]);
            climb = std::max(climb, live[p + 1] - low);
        }
        return climb;
    };
    std::vector<double> gaps;  // after range i, up to range i + 1
    double largest = rise(0, ranges.front().begin);
    for (size_t i = 0; i + 1 < ranges.size(); ++i) {
        gaps.push_back(rise(ranges[i].end, std::max(ranges[i].end, ranges[i + 1].begin)));
        largest = std::max(largest, gaps.back());
    }
    std::vector<StepWindow> out;
    size_t begin = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
        const bool closes = i + 1 == ranges.size() || (largest > 0 && 2 * gaps[i] >= largest);
        if (!closes) continue;
        if (ranges[i].end > begin)
            out.push_back({{begin, ranges[i].end}, std::max(begin, ranges[i].begin), true});
        begin = ranges[i].end;
    }
    if (begin < n && !out.empty()) {
        auto allocs = [&](size_t from, size_t to) {
            size_t k = 0;
            for (size_t p = from; p < to; ++p) k += trace.events[order[p]].kind == EventKind::Alloc;
            return k;
        };
        const size_t tail = allocs(begin, n), in_steps = allocs(0, begin);
        if (4 * tail * out.size() >= in_steps)
            out.push_back({{begin, n}, n, false});
        else
            out.back().step.end = n;
    }
    return out;
}

bool addStepPhases(Trace& trace, const EventIndexList& order, const std::vector<StepWindow>& steps,
                   const std::vector<uint64_t>& free_of, TrainingActivity& activity,
                   int16_t device) {
    std::vector<int64_t> position(trace.events.size(), -1);
    for (size_t p = 0; p < order.size(); ++p) position[order[p]] = int64_t(p);
    bool any_frames = false;
    // One inferred phase over positions [begin, end), set as their events'
    // phase unless a recorded phase inside it (not around it) holds them.
    auto add = [&](const std::string& name, PhaseKind kind, PhaseId parent, int32_t step,
                   size_t begin, size_t end) {
        Phase p;
        p.name = trace.internString(name);
        p.kind = kind;
        p.parent = parent;
        p.step = step;
        p.device = device;
        p.start = timeAt(trace, order, begin);
        p.end = std::max(p.start + 1, timeAt(trace, order, end));
        p.inferred = true;
        const PhaseId id = trace.addPhase(p);
        for (size_t q = begin; q < end; ++q) {
            PhaseId& at = trace.events[order[q]].phase;
            if (at.value == 0 || at.value > trace.phases.size()) {
                at = id;
                continue;
            }
            // A recorded range around the whole inferred phase (a run's NVTX
            // range) is outer; one that ends inside it is inner and stays.
            const Phase& was = trace.phases[at.value - 1];
            if (was.inferred || (was.start <= p.start && was.end >= p.end)) at = id;
        }
        return id;
    };
    for (size_t k = 0; k < steps.size(); ++k) {
        const Window w = steps[k].step;
        const Window train{w.begin, std::clamp(steps[k].train_end, w.begin, w.end)};
        const auto step = int32_t(k);
        const PhaseId step_id =
            add("step " + std::to_string(k), PhaseKind::Step, PhaseId(), step, w.begin, w.end);
        if (train.end <= train.begin) continue;
        const bool recorded = steps[k].optimizer_recorded;
        std::vector<Sub> subs = fromFrames(trace, order, train, activity);
        if (!subs.empty())
            any_frames = true;
        else
            subs = fromLifetimes(trace, order, train, free_of, position, !recorded);
        const Sub* forward = nullptr;
        for (const Sub& s : subs) {
            if (s.end <= s.begin || (recorded && s.kind == PhaseKind::Optimizer)) continue;
            const PhaseId id =
                add(std::string(nameOf(s.kind)), s.kind, step_id, step, s.begin, s.end);
            if (s.kind == PhaseKind::Forward) forward = &s;
            if (s.kind == PhaseKind::Backward && forward)
                for (const Window r :
                     recomputes(trace, order, {forward->begin, forward->end}, {s.begin, s.end}))
                    add("recompute", PhaseKind::Recompute, id, step, r.begin, r.end);
        }
    }
    return any_frames;
}

}  // namespace memscope::detail
