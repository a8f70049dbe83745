#include "memscope/report/rank_report.h"

#include <cstdio>

#include "json_out.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "memscope/ranks/rank_imbalance.h"

namespace memscope {
namespace json {

namespace {

void rankDigest(Out& w, const RankDigest& r) {
    w.StartObject();
    knownInt(w, "rank", r.rank);
    field(w, "name", std::string_view(r.name));
    field(w, "path", std::string_view(r.path));
    field(w, "pid", int64_t(r.pid));
    field(w, "device", int64_t(r.device));
    field(w, "peak_bytes", int64_t(r.peak_bytes));
    field(w, "peak_since_start_us", micros(r.time_base, r.peak_time - r.start));
    key(w, "peak_phase");
    if (r.peak_phase)
        string(w, toString(*r.peak_phase));
    else
        w.Null();
    knownInt(w, "peak_step", r.peak_step);
    field(w, "peak_reserved_bytes", r.peak_reserved_bytes);
    key(w, "categories_at_peak");
    categories(w, r.categories_at_peak, nullptr);
    key(w, "peaks_by_phase");
    w.StartObject();
    for (TrainingPhase p : kAllTrainingPhases)
        if (const auto& b = r.peaks_by_phase[size_t(index(p))]) field(w, toString(p), int64_t(*b));
    w.EndObject();
    field(w, "steps", uint64_t(r.step_starts.size()));
    key(w, "digest"), w.Bool(r.from_digest);
    w.EndObject();
}

void imbalanceObject(Out& w, const RankRun& run) {
    const auto m = rankImbalance(run.ranks);
    if (!m) {
        w.Null();
        return;
    }
    const RankDigest& hi = run.ranks[m->highest];
    w.StartObject();
    field(w, "ranks", uint64_t(m->ranks));
    field(w, "highest", std::string_view(hi.name));
    field(w, "lowest", std::string_view(run.ranks[m->lowest].name));
    field(w, "max_bytes", int64_t(m->max_bytes));
    field(w, "min_bytes", int64_t(m->min_bytes));
    key(w, "mean_bytes"), w.Double(m->mean_bytes);
    key(w, "max_over_mean"), w.Double(m->maxOverMean());
    field(w, "max_minus_min_bytes", int64_t(m->maxMinusMin()));
    key(w, "above_lowest"), w.Double(m->aboveLowest());
    key(w, "phase");
    if (hi.peak_phase)
        string(w, toString(*hi.peak_phase));
    else
        w.Null();
    field(w, "text", std::string_view(imbalanceText(*m, run.ranks)));
    w.EndObject();
}

}  // namespace

void rankRun(Out& w, const RankRun& run) {
    w.StartObject();
    field(w, "path", std::string_view(run.path));
    field(w, "name", std::string_view(run.name));
    key(w, "ranks");
    w.StartArray();
    for (const RankDigest& r : run.ranks) rankDigest(w, r);
    w.EndArray();
    key(w, "imbalance");
    imbalanceObject(w, run);
    key(w, "failures");
    w.StartArray();
    for (const RankFailure& f : run.failures) {
        w.StartObject();
        field(w, "path", std::string_view(f.path));
        field(w, "message", std::string_view(f.message));
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

}  // namespace json

std::string rankRunToJson(const RankRun& run) {
    rapidjson::StringBuffer buf;
    json::Out w(buf);
    json::rankRun(w, run);
    return std::string(buf.GetString()) + "\n";
}

namespace {

// " (+3.1%)": a delta against its base, "" without a base to divide by.
std::string percent(int64_t delta, int64_t base) {
    if (base <= 0) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%+.1f%%)", 100.0 * double(delta) / double(base));
    return buf;
}

}  // namespace

std::string rankComparisonText(const RankComparison& c) {
    std::string out = "ranks of " + terminalText(c.other_name) + " (" + terminalText(c.other_path) +
                      ") against " + terminalText(c.base_name) + " (" + terminalText(c.base_path) +
                      ")\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-10s %12s %12s %14s\n", "rank", "baseline", "this",
                  "delta");
    out += line;
    for (const RankDelta& r : c.ranks) {
        const std::string base = r.base_bytes ? formatBytes(*r.base_bytes) : "-";
        const std::string other = r.other_bytes ? formatBytes(*r.other_bytes) : "-";
        const std::string delta =
            r.delta() ? formatSignedBytes(*r.delta()) + percent(*r.delta(), *r.base_bytes) : "";
        std::snprintf(line, sizeof line, "  %-10s %12s %12s  %s\n", terminalText(r.name).c_str(),
                      base.c_str(), other.c_str(), delta.c_str());
        out += line;
    }
    out += "  worst rank: " + terminalText(c.base_worst) + " " + formatBytes(c.base_worst_bytes) +
           " -> " + terminalText(c.other_worst) + " " + formatBytes(c.other_worst_bytes) + ", " +
           formatSignedBytes(c.worstDelta()) + percent(c.worstDelta(), c.base_worst_bytes) + "\n";
    return out;
}

std::string rankComparisonJson(const RankComparison& c) {
    using namespace json;
    rapidjson::StringBuffer buf;
    Out w(buf);
    w.StartObject();
    field(w, "base", std::string_view(c.base_name));
    field(w, "other", std::string_view(c.other_name));
    field(w, "base_path", std::string_view(c.base_path));
    field(w, "other_path", std::string_view(c.other_path));
    key(w, "ranks");
    w.StartArray();
    for (const RankDelta& r : c.ranks) {
        w.StartObject();
        knownInt(w, "rank", r.rank);
        field(w, "name", std::string_view(r.name));
        field(w, "base_bytes", r.base_bytes);
        field(w, "other_bytes", r.other_bytes);
        field(w, "delta_bytes", r.delta());
        w.EndObject();
    }
    w.EndArray();
    key(w, "worst");
    w.StartObject();
    field(w, "base", std::string_view(c.base_worst));
    field(w, "base_bytes", int64_t(c.base_worst_bytes));
    field(w, "other", std::string_view(c.other_worst));
    field(w, "other_bytes", int64_t(c.other_worst_bytes));
    field(w, "delta_bytes", int64_t(c.worstDelta()));
    w.EndObject();
    w.EndObject();
    return std::string(buf.GetString()) + "\n";
}

}  // namespace memscope
