#include "memscope/analysis/prediction_check.h"

#include <cstdio>

namespace memscope {

std::vector<std::optional<PredictionCheck>> predictionChecks(const CompareTable& table) {
    std::vector<std::optional<PredictionCheck>> out(table.rows.size());
    for (size_t i = 0; i < table.rows.size(); ++i) {
        const CompareRow& predicted = table.rows[i];
        const Trace* p = predicted.run.trace;
        if (!p || !p->prediction || !predicted.peak) continue;
        for (size_t j = 0; j < table.rows.size(); ++j) {
            const CompareRow& measured = table.rows[j];
            const Trace* m = measured.run.trace;
            // A prediction is never checked against another prediction, nor
            // against a run that does not say which policy it ran.
            if (j == i || !m || m->prediction || !m->metrics || m->metrics->policy.empty() ||
                m->metrics->policy != p->prediction->policy || !measured.peak)
                continue;
            PredictionCheck c;
            c.measured_row = j;
            c.delta_bytes = predicted.peak->bytes - measured.peak->bytes;
            c.delta_fraction = measured.peak->bytes > 0
                                   ? double(c.delta_bytes) / double(measured.peak->bytes)
                                   : 0.0;
            out[i] = c;
            break;
        }
    }
    return out;
}

std::string predictionCheckCell(const PredictionCheck& check) {
    const double percent = check.delta_fraction * 100.0;
    char buf[64];
    // Rounded first, so that -0.04% reads "0.0%", never "-0.0%".
    const double shown = double(int64_t(percent * 10.0 + (percent < 0 ? -0.5 : 0.5))) / 10.0;
    if (shown == 0) return "0.0%";
    // The same signs as the table's other differences ("+12.0 MiB (+3.1%)").
    std::snprintf(buf, sizeof buf, "%s%.1f%%", shown > 0 ? "+" : "-", shown > 0 ? shown : -shown);
    return buf;
}

}  // namespace memscope
