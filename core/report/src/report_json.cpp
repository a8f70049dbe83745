#include "memscope/report/report_json.h"

#include <algorithm>

#include "allocator_json.h"
#include "json_out.h"
#include "memscope/analysis/activation_theory.h"
#include "memscope/analysis/category_rules.h"
#include "memscope/analysis/module_breakdown.h"
#include "memscope/analysis/oom_report.h"
#include "memscope/analysis/op_breakdown.h"
#include "memscope/analysis/peak_explainer.h"
#include "memscope/analysis/source_lines.h"
#include "memscope/base/units.h"
#include "memscope/model/phases.h"

namespace memscope {
namespace json {

std::optional<int64_t> micros(TimeBase base, int64_t time) {
    if (base != TimeBase::Nanoseconds) return std::nullopt;
    return nanosToMicrosFloor(time);
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
    field(w, "bytes", int64_t(p.bytes));
    field(w, "time_us", micros(trace, p.time));
    field(w, "increase_bytes", int64_t(p.increaseBytes()));
    field(w, "start_bytes", int64_t(p.start_bytes));
    field(w, "phase", std::string_view(phasePath(trace, p.phase)));
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
        field(w, "start_us", micros(trace, s.start));
        field(w, "end_us", micros(trace, s.end));
        field(w, "bytes", int64_t(s.whole.bytes));
        field(w, "time_us", micros(trace, s.whole.time));
        field(w, "increase_bytes", int64_t(s.whole.increaseBytes()));
        key(w, "by_category");
        categories(w, s.whole.by_category);
        key(w, "peaks_by_phase");
        peaksByPhase(w, trace, s.phases);
        w.EndObject();
    }
    w.EndArray();
}

// [{"op", "bytes", "count", "by_category"}]: the ops that made the peak's
// bytes, every row (they add up to the peak); "op" is null for the bytes
// made outside every op; empty for a trace without ops.
void opsAtPeak(Out& w, const OpBreakdown& b) {
    w.StartArray();
    if (b.source == OpSource::None) {  // no ops at all: no rows
        w.EndArray();
        return;
    }
    for (const OpShare& r : b.rows) {
        w.StartObject();
        key(w, "op");
        if (r.name.isNull())
            w.Null();
        else
            string(w, r.label);
        field(w, "bytes", int64_t(r.bytes));
        key(w, "count");
        w.Uint(r.count);
        key(w, "by_category");
        categories(w, r.by_category);
        w.EndObject();
    }
    w.EndArray();
}

// [{"path", "bytes", "count", "by_category", "recomputed_bytes", "source"}]:
// the layers holding the peak, every row (they add up to the peak).
void modulesAtPeak(Out& w, const ModuleBreakdown& b) {
    w.StartArray();
    for (const ModuleBytes& r : b.rows) {
        w.StartObject();
        field(w, "path", std::string_view(r.path));
        field(w, "bytes", int64_t(r.bytes));
        key(w, "count");
        w.Uint(r.count);
        key(w, "by_category");
        categories(w, r.by_category);
        field(w, "recomputed_bytes", int64_t(r.recomputed_bytes));
        // Bytes outside every module are neither recorded nor inferred to
        // belong anywhere.
        field(w, "source", std::string_view(r.module.isNull() ? "none" : toString(b.source)));
        w.EndObject();
    }
    w.EndArray();
}

void peakSites(Out& w, const Trace& trace, const DeviceTimeline& tl,
               const std::vector<SiteAtPeak>& sites) {
    w.StartArray();
    for (const SiteAtPeak& s : sites) {
        w.StartObject();
        field(w, "site", std::string_view(s.label));
        field(w, "bytes", int64_t(s.bytes));
        key(w, "count");
        w.Uint(s.count);
        field(w, "category", std::string_view(toString(s.category)));
        // The op holding most of the site's bytes, recorded or inferred.
        if (s.op) {
            field(w, "op", trace.string(s.op->name));
            field(w, "op_source", toString(s.op->source));
        }
        // The lifetime of the site's largest allocation live at the peak.
        const AllocationInterval& a = tl.intervals[s.largest];
        field(w, "largest_bytes", uint64_t(a.size));
        field(w, "largest_alloc_us",
              a.alloc_event == kNoEvent ? std::nullopt : micros(trace, a.start));
        field(w, "largest_free_us", a.free_event == kNoEvent ? std::nullopt : micros(trace, a.end));
        w.EndObject();
    }
    w.EndArray();
}

// The training steps and the phases inside each, for traces that have Step
// phases: what a test or a script checks first ("did every step get its
// forward, backward and optimizer?").
void steps(Out& w, const Trace& trace) {
    // Each phase's enclosing step, found once (phases nest a few levels deep).
    const size_t n = trace.phases.size();
    std::vector<std::vector<uint32_t>> inside(n + 1);
    std::vector<uint32_t> step_ids;
    for (uint32_t id = 1; id <= n; ++id) {
        if (trace.phases[id - 1].kind == PhaseKind::Step) {
            step_ids.push_back(id);
            continue;
        }
        uint32_t up = trace.phases[id - 1].parent.value;
        for (int depth = 0; up != 0 && up <= n && depth < 64; ++depth) {
            if (trace.phases[up - 1].kind == PhaseKind::Step) {
                inside[up].push_back(id);
                break;
            }
            up = trace.phases[up - 1].parent.value;
        }
    }
    auto byStart = [&](uint32_t a, uint32_t b) {
        return trace.phases[a - 1].start < trace.phases[b - 1].start;
    };
    std::stable_sort(step_ids.begin(), step_ids.end(), byStart);
    // Each step's phases by name: the training phases by kind (an optimizer
    // fused into backward counts as "optimizer" too), other ranges directly
    // inside the step by their own name; [first start, last end] of each.
    auto phaseKey = [&](uint32_t step, uint32_t j) -> std::string {
        const Phase& q = trace.phases[j - 1];
        const bool training = q.kind == PhaseKind::Forward || q.kind == PhaseKind::Backward ||
                              q.kind == PhaseKind::Optimizer || q.kind == PhaseKind::Recompute;
        if (training) return std::string(toString(q.kind));
        return q.parent.value == step ? std::string(trace.string(q.name)) : "";
    };
    w.StartArray();
    for (size_t k = 0; k < step_ids.size(); ++k) {
        const uint32_t id = step_ids[k];
        const Phase& p = trace.phases[id - 1];
        w.StartObject();
        field(w, "index", int64_t(k));
        field(w, "step", int64_t(p.step));
        field(w, "name", trace.string(p.name));
        field(w, "start_us", nanosToMicrosFloor(p.start));
        field(w, "end_us", nanosToMicrosCeil(p.end));
        field(w, "source", std::string_view(p.inferred ? "inferred" : "recorded"));
        if (p.device >= 0) field(w, "device", int64_t(p.device));
        std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> spans;
        std::stable_sort(inside[id].begin(), inside[id].end(), byStart);
        for (uint32_t j : inside[id]) {
            const std::string name = phaseKey(id, j);
            if (name.empty()) continue;
            const Phase& q = trace.phases[j - 1];
            auto it = std::find_if(spans.begin(), spans.end(),
                                   [&](const auto& s) { return s.first == name; });
            if (it == spans.end())
                spans.push_back({name, {q.start, q.end}});
            else
                it->second.second = std::max(it->second.second, q.end);
        }
        key(w, "phases");
        w.StartObject();
        for (const auto& [name, span] : spans) {
            key(w, name);
            w.StartArray();
            w.Int64(nanosToMicrosFloor(span.first));
            w.Int64(nanosToMicrosCeil(span.second));
            w.EndArray();
        }
        w.EndObject();
        w.EndObject();
    }
    w.EndArray();
}

void categorySources(Out& w, const std::array<CategorySources, kCategoryCount>& sources) {
    w.StartObject();
    for (Category c : kAllCategories) {
        const CategorySources& src = sources[size_t(index(c))];
        if (!src.recorded && !src.inferred) continue;
        key(w, toString(c));
        string(w, src.recorded && src.inferred ? "recorded+inferred"
                  : src.inferred               ? "inferred"
                                               : "recorded");
    }
    w.EndObject();
}

void categoryRules(Out& w, const std::vector<CategoryRuleBytes>& rules) {
    w.StartArray();
    for (const CategoryRuleBytes& r : rules) {
        w.StartObject();
        field(w, "category", toString(r.category));
        field(w, "source",
              std::string_view(r.rule == CategoryRule::Recorded ? "recorded" : "inferred"));
        field(w, "rule", toString(r.rule));
        field(w, "why", describe(r.rule));
        field(w, "bytes", r.bytes);
        field(w, "count", uint64_t(r.count));
        w.EndObject();
    }
    w.EndArray();
}

// One out-of-memory report (oom_report.h); an end state's has no request.
void oomAlternatives(Out& w, const OomAlternatives& a) {
    w.StartObject();
    field(w, "predicted", std::string_view("by the caching-allocator model, not measured"));
    field(w, "device_capacity_bytes", a.device_capacity);
    field(w, "capacity_source",
          std::string_view(a.capacity_from_device_free ? "reserved + device_free"
                                                       : "reserved (device_free not recorded)"));
    key(w, "model_agrees");
    w.Bool(a.model_agrees);
    key(w, "alternatives");
    w.StartArray();
    for (const OomAlternative& alt : a.alternatives) {
        w.StartObject();
        field(w, "kind",
              std::string_view(alt.kind == OomAlternativeKind::Settings     ? "settings"
                               : alt.kind == OomAlternativeKind::EmptyCache ? "empty_cache"
                                                                            : "policy"));
        field(w, "name", std::string_view(alt.name));
        key(w, "served");
        w.Bool(alt.served);
        if (alt.served) field(w, "spare_bytes", alt.spare_bytes);
        if (!alt.detail.empty()) field(w, "detail", std::string_view(alt.detail));
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

void oomReport(Out& w, const Trace& trace, const DeviceTimeline* tl, const OomReport& r,
               const OomAlternatives* alternatives) {
    w.StartObject();
    field(w, "event_index",
          r.event_index < 0 ? std::nullopt : std::optional<int64_t>(r.event_index));
    field(w, "time_us", micros(trace, r.time));
    field(w, "since_start_us",
          trace.metadata.time_base == TimeBase::Nanoseconds
              ? std::optional<int64_t>(nanosToMicrosFloor(r.since_start))
              : std::nullopt);
    field(w, "requested_bytes", r.requested_bytes);
    field(w, "device_free_bytes", r.device_free_bytes);
    field(w, "reserved_bytes", r.reserved_bytes);
    field(w, "allocated_bytes", r.allocated_bytes);
    field(w, "cached_free_bytes", r.cachedFreeBytes());
    field(w, "active_bytes", r.active_bytes);
    field(w, "largest_free_block_bytes", r.largest_free_block);
    field(w, "verdict", toString(r.verdict));
    field(w, "verdict_text", std::string_view(describeVerdict(r)));
    if (r.phase.isNull()) {
        key(w, "phase"), w.Null();
    } else {
        field(w, "phase", std::string_view(phasePath(trace, r.phase)));
        field(w, "phase_source", std::string_view(r.phase_inferred ? "inferred" : "recorded"));
    }
    key(w, "by_category");
    categories(w, r.by_category);
    key(w, "category_sources");
    categorySources(w, r.category_sources);
    if (tl) {
        key(w, "sites");
        peakSites(w, trace, *tl, r.sites);
    }
    if (!r.note.empty()) field(w, "note", std::string_view(r.note));
    if (alternatives) {
        key(w, "what_would_have_fit");
        oomAlternatives(w, *alternatives);
    }
    w.EndObject();
}

void activationTheory(Out& w, const ActivationTheory& t) {
    w.StartObject();
    field(w, "policy", std::string_view(t.policy));
    field(w, "step", int64_t(t.step));
    field(w, "element_bytes", int64_t(t.element_bytes));
    field(w, "formula", std::string_view(t.formulasText()));
    field(w, "source", formulaSource(t.main_formula));
    field(w, "measured_bytes", t.measured_total);
    field(w, "predicted_bytes", t.predicted_total);
    field(w, "ratio", t.ratio());
    field(w, "outside_layers_bytes", t.outside_layers);
    key(w, "layers");
    w.StartArray();
    for (const LayerActivation& l : t.layers) {
        w.StartObject();
        field(w, "layer", int64_t(l.layer));
        field(w, "measured_bytes", l.measured);
        field(w, "predicted_bytes", l.predicted);
        field(w, "formula", formulaText(l.formula));
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

}  // namespace json

std::string activationTheoryToJson(const ActivationTheory& theory) {
    rapidjson::StringBuffer buf;
    json::Out w(buf);
    json::activationTheory(w, theory);
    return buf.GetString();
}

std::string peaksByPhaseToJson(const Trace& trace, const PhasePeaks& peaks) {
    rapidjson::StringBuffer buf;
    json::Out w(buf);
    json::peaksByPhase(w, trace, peaks.by_phase);
    return buf.GetString();
}

namespace {
const OomAlternatives* alternativesFor(const FileReport& f, const OomReport& r) {
    for (const auto& [event, a] : f.oom_alternatives)
        if (event == r.trace_event) return &a;
    return nullptr;
}
}  // namespace

void addOomAlternatives(FileReport& file, const TaskContext& ctx) {
    if (!file.trace || !file.timeline) return;
    for (const auto& [device, d] : file.summary.devices)
        for (const OomReport& r : d.ooms) {
            if (r.endState() || !r.requested_bytes) continue;
            if (auto a = oomAlternatives(*file.trace, *file.timeline, r, ctx))
                file.oom_alternatives.emplace_back(r.trace_event, std::move(*a));
        }
}

std::string summaryToJson(std::span<const FileReport> files, std::span<const RankRun> runs) {
    using namespace json;
    rapidjson::StringBuffer buf;
    Out w(buf);
    w.StartObject();
    key(w, "files");
    w.StartArray();
    for (const FileReport& f : files) {
        const ModuleAttribution modules =
            f.trace ? ModuleAttribution(*f.trace) : ModuleAttribution();
        const OpAttribution ops = f.trace ? OpAttribution(*f.trace) : OpAttribution();
        w.StartObject();
        field(w, "path", std::string_view(f.path));
        const std::string_view name = !f.name.empty() ? std::string_view(f.name)
                                      : f.trace       ? std::string_view(f.trace->metadata.name)
                                                      : std::string_view();
        if (!name.empty()) field(w, "name", name);
        // "measured" or "predicted": from the trace's own provenance.
        field(w, "provenance",
              std::string_view(f.trace && f.trace->prediction ? "predicted" : "measured"));
        field(w, "format", std::string_view(f.format));
        if (f.trace && !f.trace->metadata.source_format.empty() &&
            f.trace->metadata.source_format != f.format) {
            field(w, "source", std::string_view(f.trace->metadata.source_format));
        }
        if (!f.warnings.empty()) {
            key(w, "warnings");
            w.StartArray();
            for (const LoadWarning& x : f.warnings) {
                w.StartObject();
                field(w, "kind", std::string_view(toString(x.kind)));
                field(w, "message", std::string_view(x.message));
                field(w, "count", uint64_t(x.count));
                w.EndObject();
            }
            w.EndArray();
        }
        if (f.trace) {
            if (const std::string* how = f.trace->metadata.property("phases"))
                field(w, "phases_source", std::string_view(*how));
            // Only part of the run was recorded (record --steps / --capture-range).
            if (const std::string* range = f.trace->metadata.property("recorded_range"))
                field(w, "recorded_range", std::string_view(*range));
            key(w, "steps");
            steps(w, *f.trace);
        }
        key(w, "devices");
        w.StartObject();
        for (const auto& [device, d] : f.summary.devices) {
            key(w, std::to_string(device));
            w.StartObject();
            field(w, "segments", d.segments);
            field(w, "reserved_bytes", d.reserved_bytes);
            field(w, "peak_reserved_bytes", d.peak_reserved_bytes);
            field(w, "final_active_bytes", d.final_active_bytes);
            field(w, "trace_entries", uint64_t(d.trace_entries));
            field(w, "alloc_count", uint64_t(d.alloc_count));
            field(w, "free_completed_count", uint64_t(d.free_completed_count));
            field(w, "segment_alloc_count", uint64_t(d.segment_alloc_count));
            field(w, "oom_count", uint64_t(d.oom_count));
            if (d.allocator_model) {
                key(w, "allocator_model");
                json::allocatorModel(w, *d.allocator_model, true);
            }
            field(w, "peak_active_bytes", int64_t(d.peak_active_bytes));
            field(w, "peak_event_index", int64_t(d.peak_event_index));
            field(w, "peak_time_us", d.peak_time_us);
            field(w, "first_time_us", d.first_time_us);
            field(w, "last_time_us", d.last_time_us);
            key(w, "categories_at_peak");
            categories(w, d.categories_at_peak);
            if (f.trace && f.timeline) {
                if (const DeviceTimeline* tl = f.timeline->device(device)) {
                    // Which categories' bytes memscope inferred (inference.h)
                    // rather than read from the trace.
                    key(w, "category_sources");
                    categorySources(w, tl->category_sources);
                    // And the rule that decided each category's bytes at the peak.
                    key(w, "category_rules_at_peak");
                    categoryRules(w, categoryRulesAtPeak(*f.trace, *tl));
                    key(w, "peak_sites");
                    peakSites(w, *f.trace, *tl, sitesAtPeak(*f.trace, *tl, 10));
                    // Which layer holds the peak (module_breakdown.h); empty
                    // with modules_source "none" for a trace without modules.
                    const ModuleBreakdown by_module =
                        memscope::modulesAtPeak(*f.trace, modules, *tl);
                    field(w, "modules_source", std::string_view(toString(by_module.source)));
                    key(w, "modules_at_peak");
                    if (by_module.source == ModuleSource::None) {
                        w.StartArray();
                        w.EndArray();
                    } else {
                        modulesAtPeak(w, by_module);
                    }
                    // Which ops made the peak's bytes (op_breakdown.h);
                    // empty with ops_source "none" for a trace without ops.
                    const OpBreakdown by_op = memscope::opsAtPeak(*f.trace, ops, *tl);
                    field(w, "ops_source", std::string_view(toString(by_op.source)));
                    key(w, "ops_at_peak");
                    opsAtPeak(w, by_op);
                    // summary --by-line: the source lines at the peak.
                    if (f.by_line) {
                        const LinesAtPeak lines = linesAtPeak(*f.trace, modules, *tl, f.by_line);
                        key(w, "lines_at_peak");
                        w.StartArray();
                        for (const LineBytes& r : lines.rows) {
                            w.StartObject();
                            field(w, "label", r.label);
                            key(w, "file");
                            if (r.file.empty())
                                w.Null();
                            else
                                string(w, r.file);
                            field(w, "line", uint64_t(r.line));
                            field(w, "function", r.function);
                            key(w, "module");
                            if (r.module.empty())
                                w.Null();
                            else
                                string(w, r.module);
                            field(w, "bytes", r.bytes);
                            field(w, "count", uint64_t(r.count));
                            w.EndObject();
                        }
                        w.EndArray();
                        field(w, "lines_rest_bytes", lines.rest_bytes);
                    }
                    // Runs of memscope-train: activations per layer against
                    // the literature's formulas (activation_theory.h).
                    if (f.trace->metrics && f.trace->metrics->model) {
                        if (auto theory = memscope::activationTheory(*f.trace, *tl)) {
                            key(w, "activation_theory");
                            activationTheory(w, *theory);
                        }
                    }
                }
            }
            if (f.trace) {
                // Out-of-memory events; a snapshot of only an end state gets
                // the same report of that state, apart, as it records no OOM.
                const DeviceTimeline* tl = f.timeline ? f.timeline->device(device) : nullptr;
                key(w, "ooms");
                w.StartArray();
                for (const OomReport& r : d.ooms)
                    if (!r.endState()) oomReport(w, *f.trace, tl, r, alternativesFor(f, r));
                w.EndArray();
                for (const OomReport& r : d.ooms)
                    if (r.endState()) {
                        key(w, "end_state");
                        oomReport(w, *f.trace, tl, r, nullptr);
                    }
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
    if (!runs.empty()) {
        key(w, "runs");
        w.StartArray();
        for (const RankRun& r : runs) rankRun(w, r);
        w.EndArray();
    }
    w.EndObject();
    return std::string(buf.GetString()) + "\n";
}

}  // namespace memscope
