#include "memscope/ranks/rank_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "json_out.h"
#include "memscope/base/units.h"

namespace memscope {
namespace {

std::string percent(int64_t delta, int64_t base) {
    if (base <= 0) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%+.1f%%)", 100.0 * double(delta) / double(base));
    return buf;
}

}  // namespace

RankComparison compareRanks(const RankRun& base, const RankRun& other) {
    RankComparison c;
    c.base_name = base.name;
    c.other_name = other.name;
    c.base_path = base.path;
    c.other_path = other.path;
    const auto a = comparedRanks(base.ranks), b = comparedRanks(other.ranks);
    // By rank number where both know their ranks, else by position.
    const bool by_rank =
        std::all_of(a.begin(), a.end(), [](const RankDigest* r) { return r->rank >= 0; }) &&
        std::all_of(b.begin(), b.end(), [](const RankDigest* r) { return r->rank >= 0; });
    std::map<int64_t, RankDelta> rows;
    auto add = [&](const std::vector<const RankDigest*>& side, bool is_base) {
        for (size_t i = 0; i < side.size(); ++i) {
            const RankDigest& r = *side[i];
            RankDelta& row = rows[by_rank ? r.rank : int64_t(i)];
            if (row.name.empty()) row.name = by_rank ? r.name : "part " + std::to_string(i);
            row.rank = by_rank ? r.rank : -1;
            (is_base ? row.base_bytes : row.other_bytes) = r.peak_bytes;
            std::string& worst = is_base ? c.base_worst : c.other_worst;
            int64_t& worst_bytes = is_base ? c.base_worst_bytes : c.other_worst_bytes;
            if (worst.empty() || r.peak_bytes > worst_bytes) {
                worst = r.name;
                worst_bytes = r.peak_bytes;
            }
        }
    };
    add(a, true);
    add(b, false);
    for (auto& [key, row] : rows) c.ranks.push_back(std::move(row));
    return c;
}

std::string rankComparisonText(const RankComparison& c) {
    std::string out = "ranks of " + c.other_name + " (" + c.other_path + ") against " +
                      c.base_name + " (" + c.base_path + ")\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-10s %12s %12s %14s\n", "rank", "baseline", "this",
                  "delta");
    out += line;
    for (const RankDelta& r : c.ranks) {
        const std::string base = r.base_bytes ? formatBytes(*r.base_bytes) : "-";
        const std::string other = r.other_bytes ? formatBytes(*r.other_bytes) : "-";
        const std::string delta =
            r.delta() ? formatSignedBytes(*r.delta()) + percent(*r.delta(), *r.base_bytes) : "";
        std::snprintf(line, sizeof line, "  %-10s %12s %12s  %s\n", r.name.c_str(), base.c_str(),
                      other.c_str(), delta.c_str());
        out += line;
    }
    out += "  worst rank: " + c.base_worst + " " + formatBytes(c.base_worst_bytes) + " -> " +
           c.other_worst + " " + formatBytes(c.other_worst_bytes) + ", " +
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
