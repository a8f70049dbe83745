#include "memscope/ranks/rank_digest.h"

#include <algorithm>
#include <set>

#include "memscope/analysis/summary.h"
#include "memscope/ranks/rank_identity.h"

namespace memscope {
namespace {

// Max of a step function over each of `columns` equal slices of [start, end].
std::vector<int64_t> envelopeOf(const StepSeries& series, int64_t start, int64_t end,
                                size_t columns) {
    std::vector<int64_t> env(columns, 0);
    const auto xs = series.xs();
    const auto ys = series.ys();
    if (xs.empty()) return {};
    const double span = double(std::max<int64_t>(end - start, 1));
    auto columnOf = [&](int64_t x) {
        const double f = double(x - start) / span;
        return std::min(columns - 1, size_t(std::max(0.0, f * double(columns))));
    };
    int64_t current = series.initial;
    size_t column = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
        const size_t c = columnOf(xs[i]);
        // Columns before this point's hold the value in force, whole.
        for (; column < c; ++column) env[column] = std::max(env[column], current);
        env[c] = std::max({env[c], current, ys[i]});
        current = ys[i];
    }
    for (; column < columns; ++column) env[column] = std::max(env[column], current);
    return env;
}

}  // namespace

std::string scriptOfRanks(const std::vector<std::string>& names) {
    std::set<std::string> scripts;
    for (const std::string& name : names) {
        if (name.empty()) continue;
        std::string script = name;
        // "train.py rank 1" -> "train.py"
        if (const auto at = name.rfind(" rank ");
            at != std::string::npos && at > 0 && at + 6 < name.size() &&
            name.find_first_not_of("0123456789", at + 6) == std::string::npos)
            script = name.substr(0, at);
        scripts.insert(script);
    }
    return scripts.size() == 1 ? *scripts.begin() : std::string();
}

std::vector<const RankDigest*> comparedRanks(const std::vector<RankDigest>& ranks) {
    const bool any_ranked =
        std::any_of(ranks.begin(), ranks.end(), [](const RankDigest& r) { return r.rank >= 0; });
    std::vector<const RankDigest*> out;
    for (const RankDigest& r : ranks)
        if (countsAsRank(r.rank, any_ranked)) out.push_back(&r);
    return out;
}

std::string rankName(int32_t rank, const std::string& fallback) {
    return rank >= 0 ? "rank " + std::to_string(rank) : fallback;
}

RankDigest digestRank(const Trace& trace, const Timeline& timeline, const std::string& path,
                      const std::string& run_name) {
    RankDigest d;
    d.path = path;
    d.rank = trace.metadata.rank;
    d.pid = trace.metadata.pid;
    d.name = rankName(d.rank, run_name);
    d.time_base = trace.metadata.time_base;
    const DeviceTimeline* top = timeline.highestPeakDevice();
    if (!top) return d;
    d.device = top->device;
    d.peak_bytes = top->peak.bytes;
    d.peak_time = top->peak.time;
    d.categories_at_peak = top->peak.by_category;
    d.start = top->start;
    d.end = top->end;
    for (TrainingPhase p : kAllTrainingPhases)
        if (const auto& w = top->phase_peaks.by_phase[size_t(index(p))]) {
            d.peaks_by_phase[size_t(index(p))] = w->bytes;
            // The phase whose highest point is the rank's peak holds it.
            if (w->bytes == d.peak_bytes && !d.peak_phase) {
                d.peak_phase = p;
                d.peak_step = w->step;
            }
        }
    const TraceSummary summary = summarize(trace, timeline);
    if (auto it = summary.devices.find(top->device); it != summary.devices.end())
        d.peak_reserved_bytes = it->second.peak_reserved_bytes;
    for (const StepBounds& s : stepBounds(trace, top->device)) d.step_starts.push_back(s.start);
    d.envelope = envelopeOf(top->live, d.start, d.end, kRankEnvelopeColumns);
    return d;
}

void sortRanks(std::vector<RankDigest>& ranks) {
    std::stable_sort(ranks.begin(), ranks.end(), [](const RankDigest& a, const RankDigest& b) {
        if ((a.rank < 0) != (b.rank < 0)) return b.rank < 0;
        if (a.rank != b.rank) return a.rank < b.rank;
        return a.path < b.path;
    });
}

}  // namespace memscope
