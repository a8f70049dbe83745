#include "memscope/analysis/line_compare.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace memscope {
namespace {

std::string_view baseName(std::string_view path) {
    const size_t slash = path.find_last_of("/\\");
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Sorts after every line: the rest, then the allocations without a user frame.
enum class Kind { Line, Other, NoUserFrame };

}  // namespace

LinesCompared compareLines(const std::vector<const LinesAtPeak*>& runs) {
    LinesCompared out;
    const size_t n = runs.size();
    using Key = std::tuple<Kind, std::string, std::string, uint32_t>;  // function, file, line
    std::map<Key, LineAcrossRuns> rows;
    auto rowOf = [&](const Key& key) -> LineAcrossRuns& {
        auto [it, fresh] = rows.try_emplace(key);
        if (fresh) {
            LineAcrossRuns& r = it->second;
            const auto& [kind, function, file, line] = key;
            r.function = function;
            r.file = file;
            r.line = line;
            r.label = kind == Kind::Other         ? std::string(kOtherLinesLabel)
                      : kind == Kind::NoUserFrame ? std::string(kNoUserLineLabel)
                                                  : (function.empty() ? "??" : function) + "  (" +
                                                        file + ":" + std::to_string(line) + ")";
            r.bytes.assign(n, 0);
            r.counts.assign(n, 0);
            r.intervals.assign(n, {});
        }
        return it->second;
    };
    for (size_t k = 0; k < n; ++k) {
        const LinesAtPeak& lines = *runs[k];
        out.totals.push_back(lines.total);
        for (const LineBytes& l : lines.rows) {
            const bool none = l.label == kNoUserLineLabel && l.file.empty();
            LineAcrossRuns& r =
                none ? rowOf({Kind::NoUserFrame, "", "", 0})
                     : rowOf({Kind::Line, l.function, std::string(baseName(l.file)), l.line});
            // Two full paths of one basename in a run (two checkouts side by
            // side) add up on one row, as the sites of allocation_diff do.
            r.bytes[k] += l.bytes;
            r.counts[k] += l.count;
            r.intervals[k].insert(r.intervals[k].end(), l.intervals.begin(), l.intervals.end());
            if (r.module.empty()) r.module = l.module;
        }
        if (lines.rest_bytes > 0) rowOf({Kind::Other, "", "", 0}).bytes[k] += lines.rest_bytes;
    }
    std::vector<std::pair<Kind, LineAcrossRuns>> sorted;
    for (auto& [key, row] : rows) sorted.emplace_back(std::get<0>(key), std::move(row));
    auto most = [](const LineAcrossRuns& r) {
        return r.bytes.empty() ? int64_t(0) : *std::max_element(r.bytes.begin(), r.bytes.end());
    };
    std::sort(sorted.begin(), sorted.end(), [&](const auto& x, const auto& y) {
        if (x.first != y.first) return x.first < y.first;
        if (most(x.second) != most(y.second)) return most(x.second) > most(y.second);
        return x.second.label < y.second.label;
    });
    for (auto& [kind, row] : sorted) out.rows.push_back(std::move(row));
    return out;
}

}  // namespace memscope
