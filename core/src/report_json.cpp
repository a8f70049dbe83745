#include "memscope/report_json.h"

#include <algorithm>

#include "json_out.h"
#include "memscope/peak_explainer.h"
#include "memscope/phases.h"

namespace memscope {
namespace json {

std::optional<int64_t> micros(TimeBase base, int64_t time) {
    if (base != TimeBase::Nanoseconds) return std::nullopt;
    return time >= 0 ? time / 1000 : -((-(time + 1)) / 1000) - 1;  // floor, also before 1970
}

void categories(Out& w, const std::array<int64_t, kCategoryCount>& bytes,
                const std::vector<Category>* only) {
    w.StartObject();
    for (Category c : kAllCategories) {
        if (only && std::find(only->begin(), only->end(), c) == only->end()) continue;
        key(w, toString(c));
        w.Int64(bytes[size_t(index(c))]);
    }
    w.EndObject();
}

void windowPeak(Out& w, const Trace& trace, const WindowPeak& p) {
    w.StartObject();
    key(w, "bytes");
    w.Int64(p.bytes);
    key(w, "time_us");
    optional(w, micros(trace, p.time));
    key(w, "increase_bytes");
    w.Int64(p.increaseBytes());
    key(w, "start_bytes");
    w.Int64(p.start_bytes);
    key(w, "phase");
    string(w, phasePath(trace, p.phase));
    key(w, "by_category");
    categories(w, p.by_category);
    w.EndObject();
}

void peaksByPhase(Out& w, const Trace& trace,
                  const std::array<std::optional<WindowPeak>, kTrainingPhaseCount>& peaks) {
    w.StartObject();
    for (TrainingPhase p : kAllTrainingPhases) {
        const auto& peak = peaks[size_t(index(p))];
        if (!peak) continue;
        key(w, toString(p));
        windowPeak(w, trace, *peak);
    }
    w.EndObject();
}

void peaksByStep(Out& w, const Trace& trace, const std::vector<StepPeaks>& steps) {
    w.StartArray();
    for (const StepPeaks& s : steps) {
        w.StartObject();
        key(w, "index");
        w.Int(s.index);
        key(w, "step");
        if (s.recorded_step >= 0)
            w.Int(s.recorded_step);
        else
            w.Null();
        key(w, "start_us");
        optional(w, micros(trace, s.start));
        key(w, "end_us");
        optional(w, micros(trace, s.end));
        key(w, "bytes");
        w.Int64(s.whole.bytes);
        key(w, "time_us");
        optional(w, micros(trace, s.whole.time));
        key(w, "increase_bytes");
        w.Int64(s.whole.increaseBytes());
        key(w, "by_category");
        categories(w, s.whole.by_category);
        key(w, "peaks_by_phase");
        peaksByPhase(w, trace, s.phases);
        w.EndObject();
    }
    w.EndArray();
}

void peakSites(Out& w, const Trace& trace, const DeviceTimeline& tl,
               const std::vector<SiteAtPeak>& sites) {
    w.StartArray();
    for (const SiteAtPeak& s : sites) {
        w.StartObject();
        key(w, "site");
        string(w, s.label);
        key(w, "bytes");
        w.Int64(s.bytes);
        key(w, "count");
        w.Uint(s.count);
        key(w, "category");
        string(w, toString(s.category));
        // The lifetime of the site's largest allocation live at the peak.
        const AllocationInterval& a = tl.intervals[s.largest];
        key(w, "largest_bytes");
        w.Uint64(a.size);
        key(w, "largest_alloc_us");
        optional(w, a.alloc_event == kNoEvent ? std::nullopt : micros(trace, a.start));
        key(w, "largest_free_us");
        optional(w, a.free_event == kNoEvent ? std::nullopt : micros(trace, a.end));
        w.EndObject();
    }
    w.EndArray();
}

}  // namespace json

std::string peaksByPhaseToJson(const Trace& trace, const PhasePeaks& peaks) {
    rapidjson::StringBuffer buf;
    json::Out w(buf);
    json::peaksByPhase(w, trace, peaks.by_phase);
    return buf.GetString();
}

std::string summaryToJson(std::span<const FileReport> files) {
    using namespace json;
    rapidjson::StringBuffer buf;
    Out w(buf);
    w.StartObject();
    key(w, "files");
    w.StartArray();
    for (const FileReport& f : files) {
        w.StartObject();
        key(w, "path");
        string(w, f.path);
        key(w, "format");
        string(w, f.format);
        if (f.trace && !f.trace->metadata.source_format.empty() &&
            f.trace->metadata.source_format != f.format) {
            key(w, "source");
            string(w, f.trace->metadata.source_format);
        }
        if (!f.warnings.empty()) {
            key(w, "warnings");
            w.StartArray();
            for (const LoadWarning& x : f.warnings) {
                w.StartObject();
                key(w, "kind");
                string(w, toString(x.kind));
                key(w, "message");
                string(w, x.message);
                key(w, "count");
                w.Uint64(x.count);
                w.EndObject();
            }
            w.EndArray();
        }
        key(w, "devices");
        w.StartObject();
        for (const auto& [device, d] : f.summary.devices) {
            key(w, std::to_string(device));
            w.StartObject();
            key(w, "segments");
            optional(w, d.segments);
            key(w, "reserved_bytes");
            optional(w, d.reserved_bytes);
            key(w, "final_active_bytes");
            optional(w, d.final_active_bytes);
            key(w, "trace_entries");
            w.Uint64(d.trace_entries);
            key(w, "alloc_count");
            w.Uint64(d.alloc_count);
            key(w, "free_completed_count");
            w.Uint64(d.free_completed_count);
            key(w, "segment_alloc_count");
            w.Uint64(d.segment_alloc_count);
            key(w, "oom_count");
            w.Uint64(d.oom_count);
            key(w, "peak_active_bytes");
            w.Int64(d.peak_active_bytes);
            key(w, "peak_event_index");
            w.Int64(d.peak_event_index);
            key(w, "peak_time_us");
            optional(w, d.peak_time_us);
            key(w, "first_time_us");
            optional(w, d.first_time_us);
            key(w, "last_time_us");
            optional(w, d.last_time_us);
            key(w, "categories_at_peak");
            categories(w, d.categories_at_peak);
            if (f.trace && f.timeline) {
                if (const DeviceTimeline* tl = f.timeline->device(device)) {
                    key(w, "peak_sites");
                    peakSites(w, *f.trace, *tl, sitesAtPeak(*f.trace, *tl, 10));
                }
            }
            if (f.trace) {
                key(w, "peaks_by_phase");
                peaksByPhase(w, *f.trace, d.phase_peaks.by_phase);
                key(w, "peaks_by_step");
                peaksByStep(w, *f.trace, d.phase_peaks.by_step);
            }
            w.EndObject();
        }
        w.EndObject();
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return std::string(buf.GetString()) + "\n";
}

}  // namespace memscope
