#include "memscope/report/allocation_diff_report.h"

#include "json_out.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "text_out.h"

namespace memscope {
namespace {

std::string cell(int64_t bytes, uint32_t count) {
    if (count == 0) return "-";
    return formatBytes(bytes) + " (" + std::to_string(count) + ")";
}

void side(json::Out& w, const char* name, const std::string& path, const DiffSide& s) {
    json::key(w, name);
    w.StartObject();
    json::field(w, "path", path);
    json::key(w, "device");
    w.Int(s.device);
    json::field(w, "live_bytes", s.live_bytes);
    w.EndObject();
}

}  // namespace

std::string allocationDiffText(const AllocationDiff& d, const std::string& a, const std::string& b,
                               size_t top) {
    std::string out;
    const std::string moment = toString(d.moment);
    appendf(out, "A: %s  device %d at %s: %s live\n", terminalText(a).c_str(), d.a.device,
            moment.c_str(), formatBytes(d.a.live_bytes).c_str());
    appendf(out, "B: %s  device %d at %s: %s live\n", terminalText(b).c_str(), d.b.device,
            moment.c_str(), formatBytes(d.b.live_bytes).c_str());
    appendf(out, "only in A %s, in both %s, only in B %s; A - B = %s\n",
            cell(d.only_a_bytes, d.only_a_count).c_str(), cell(d.both_bytes, d.both_count).c_str(),
            cell(d.only_b_bytes, d.only_b_count).c_str(),
            formatSignedBytes(d.a.live_bytes - d.b.live_bytes).c_str());
    appendf(out, "  %-18s %-18s %-18s  %s\n", "only A", "both", "only B", "site");
    for (size_t i = 0; i < d.groups.size() && i < top; ++i) {
        const DiffGroup& g = d.groups[i];
        appendf(out, "  %-18s %-18s %-18s  %s\n", cell(g.only_a_bytes, g.only_a_count).c_str(),
                cell(g.both_bytes, g.both_count).c_str(),
                cell(g.only_b_bytes, g.only_b_count).c_str(), terminalText(g.site).c_str());
    }
    if (d.groups.size() > top)
        appendf(out, "  (%zu more sites; --json lists them all)\n", d.groups.size() - top);
    return out;
}

std::string allocationDiffJson(const AllocationDiff& d, const std::string& a,
                               const std::string& b) {
    rapidjson::StringBuffer buffer;
    json::Out w(buffer);
    w.StartObject();
    json::field(w, "moment", toString(d.moment));
    side(w, "a", a, d.a);
    side(w, "b", b, d.b);
    json::field(w, "only_a_bytes", d.only_a_bytes);
    json::field(w, "only_b_bytes", d.only_b_bytes);
    json::field(w, "both_bytes", d.both_bytes);
    json::field(w, "only_a_count", uint64_t(d.only_a_count));
    json::field(w, "only_b_count", uint64_t(d.only_b_count));
    json::field(w, "both_count", uint64_t(d.both_count));
    json::key(w, "groups");
    w.StartArray();
    for (const DiffGroup& g : d.groups) {
        w.StartObject();
        json::field(w, "site", g.site);
        json::key(w, "frames");
        w.StartArray();
        for (const std::string& f : g.frames) json::string(w, f);
        w.EndArray();
        json::field(w, "only_a_bytes", g.only_a_bytes);
        json::field(w, "only_b_bytes", g.only_b_bytes);
        json::field(w, "both_bytes", g.both_bytes);
        json::field(w, "only_a_count", uint64_t(g.only_a_count));
        json::field(w, "only_b_count", uint64_t(g.only_b_count));
        json::field(w, "both_count", uint64_t(g.both_count));
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    std::string out = buffer.GetString();
    out += '\n';
    return out;
}

}  // namespace memscope
