#pragma once
// RapidJSON's streaming writer, as core's JSON reports use it (private to core).
// Pretty-printed: the reports are read by people as much as by programs.

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <array>
#include <optional>
#include <string_view>

#include "memscope/analysis/category_rules.h"
#include "memscope/analysis/peak_explainer.h"
#include "memscope/base/text_escape.h"
#include "memscope/model/trace.h"
#include "memscope/ranks/rank_run.h"
#include "memscope/timeline/phase_peaks.h"
#include "memscope/timeline/timeline.h"

namespace memscope::json {

using Out = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

// Keys and strings are always valid UTF-8 (an invalid byte from a file as
// U+FFFD, text_escape.h); the writer escapes control characters (\u001b).
inline void key(Out& w, std::string_view k) {
    if (!isValidUtf8(k)) {
        const std::string valid = validUtf8(k);
        w.Key(valid.data(), rapidjson::SizeType(valid.size()), true);
        return;
    }
    w.Key(k.data(), rapidjson::SizeType(k.size()));
}
inline void string(Out& w, std::string_view s) {
    if (!isValidUtf8(s)) {
        const std::string valid = validUtf8(s);
        w.String(valid.data(), rapidjson::SizeType(valid.size()), true);
        return;
    }
    w.String(s.data(), rapidjson::SizeType(s.size()));
}
template <typename T>
void optional(Out& w, const std::optional<T>& v) {
    if (!v) {
        w.Null();
    } else if constexpr (std::is_floating_point_v<T>) {
        w.Double(*v);
    } else if constexpr (std::is_unsigned_v<T>) {
        w.Uint64(*v);
    } else {
        w.Int64(*v);
    }
}

// "key": value, for the value types the reports write.
inline void field(Out& w, std::string_view k, int64_t v) {
    key(w, k), w.Int64(v);
}
inline void field(Out& w, std::string_view k, uint64_t v) {
    key(w, k), w.Uint64(v);
}
inline void field(Out& w, std::string_view k, std::string_view v) {
    key(w, k), string(w, v);
}
template <typename T>
void field(Out& w, std::string_view k, const std::optional<T>& v) {
    key(w, k);
    optional(w, v);
}

// "key": n, or null where n is negative (not known: a rank, a step).
inline void knownInt(Out& w, std::string_view k, int32_t n) {
    key(w, k);
    if (n >= 0)
        w.Int(n);
    else
        w.Null();
}

// Ns since the epoch to µs, rounded down (also before 1970); null without a clock.
std::optional<int64_t> micros(TimeBase base, int64_t time);
inline std::optional<int64_t> micros(const Trace& trace, int64_t time) {
    return micros(trace.metadata.time_base, time);
}

// {"parameter": N, ...}: every category, or only those flagged in `only`.
void categories(Out& w, const std::array<int64_t, kCategoryCount>& bytes,
                const std::vector<Category>* only = nullptr);
// {"bytes", "time_us", "increase_bytes", "phase", "by_category"}
void windowPeak(Out& w, const Trace& trace, const WindowPeak& p);
// {"forward": {...}, "backward": {...}, "optimizer": {...}}, phases not found left out.
void peaksByPhase(Out& w, const Trace& trace,
                  const std::array<std::optional<WindowPeak>, kTrainingPhaseCount>& peaks);
// [{"index", "step", "start_us", "end_us", "bytes", ..., "peaks_by_phase"}]
void peaksByStep(Out& w, const Trace& trace, const std::vector<StepPeaks>& steps);
// [{"site", "bytes", "count", "category", "largest_bytes", "largest_alloc_us", "largest_free_us"}]
void peakSites(Out& w, const Trace& trace, const DeviceTimeline& tl,
               const std::vector<SiteAtPeak>& sites);
// {"activation": "inferred", ...}: the categories that hold bytes, and how each was known.
void categorySources(Out& w, const std::array<CategorySources, kCategoryCount>& sources);
// category_rules_at_peak: [{category, source, rule, why, bytes, count}].
void categoryRules(Out& w, const std::vector<CategoryRuleBytes>& rules);

// A multi-rank run: rank_json.h's object.
void rankRun(Out& w, const RankRun& run);

}  // namespace memscope::json
