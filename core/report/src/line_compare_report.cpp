#include "memscope/report/line_compare_report.h"

#include "json_out.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "text_out.h"

namespace memscope {

std::string linesComparedText(const LinesCompared& l, const std::vector<std::string>& names) {
    std::string out;
    appendf(out,
            "bytes at each run's peak by source line (the innermost user frame), lines matched "
            "by function, file name and line\n");
    for (size_t k = 0; k < names.size() && k < l.totals.size(); ++k)
        appendf(out, "  run %zu: %s  peak %s\n", k + 1, terminalText(names[k]).c_str(),
                formatBytes(l.totals[k]).c_str());
    std::string head;
    for (size_t k = 0; k < l.totals.size(); ++k)
        appendf(head, " %16s", ("run " + std::to_string(k + 1)).c_str());
    appendf(out, "%s  line  [module]\n", head.c_str());
    for (const LineAcrossRuns& r : l.rows) {
        std::string cells;
        for (size_t k = 0; k < r.bytes.size(); ++k) {
            // The rest's count is unknown: its bytes only.
            const std::string c = r.bytes[k] == 0    ? "-"
                                  : r.counts[k] == 0 ? formatBytes(r.bytes[k])
                                                     : formatBytes(r.bytes[k]) + " (" +
                                                           std::to_string(r.counts[k]) + ")";
            appendf(cells, " %16s", c.c_str());
        }
        const std::string module =
            r.module.empty() ? std::string() : "  [" + terminalText(r.module) + "]";
        appendf(out, "%s  %s%s\n", cells.c_str(), terminalText(r.label).c_str(), module.c_str());
    }
    std::string peaks;
    for (int64_t t : l.totals) appendf(peaks, " %16s", formatBytes(t).c_str());
    appendf(out, "%s  peak\n", peaks.c_str());
    return out;
}

std::string linesComparedJson(const LinesCompared& l, const std::vector<std::string>& names) {
    rapidjson::StringBuffer buffer;
    json::Out w(buffer);
    w.StartObject();
    json::key(w, "runs");
    w.StartArray();
    for (size_t k = 0; k < l.totals.size(); ++k) {
        w.StartObject();
        json::field(w, "path", k < names.size() ? names[k] : std::string());
        json::field(w, "peak_bytes", l.totals[k]);
        w.EndObject();
    }
    w.EndArray();
    json::key(w, "lines");
    w.StartArray();
    for (const LineAcrossRuns& r : l.rows) {
        w.StartObject();
        json::field(w, "label", r.label);
        json::field(w, "function", r.function);
        json::field(w, "file", r.file);
        json::field(w, "line", uint64_t(r.line));
        json::field(w, "module", r.module);
        json::key(w, "bytes");
        w.StartArray();
        for (int64_t b : r.bytes) w.Int64(b);
        w.EndArray();
        json::key(w, "counts");
        w.StartArray();
        for (uint32_t c : r.counts) w.Uint(c);
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    std::string out = buffer.GetString();
    out += '\n';
    return out;
}

}  // namespace memscope
