#include "allocation_search.h"

#include <algorithm>

#include "format.h"

namespace memscope::gui {

SearchResult searchAllocations(const Trace& trace, const DeviceTimeline& tl, const QString& query, size_t limit,
                               const std::atomic<bool>* cancel) {
    SearchResult out;
    const QString q = query.trimmed();
    if (q.isEmpty()) return out;
    bool isNumber = false;
    uint64_t address = 0;
    if (q.startsWith(QLatin1String("0x"), Qt::CaseInsensitive))
        address = q.mid(2).toULongLong(&isNumber, 16);
    else
        address = q.toULongLong(&isNumber, 10);

    std::vector<uint32_t> hits;
    if (isNumber) {
        for (uint32_t i = 0; i < tl.intervals.size(); ++i) {
            if ((i & 0xffff) == 0 && cancel && cancel->load()) return out;
            const AllocationInterval& a = tl.intervals[i];
            if (address >= a.address && address < a.address + std::max<uint64_t>(a.size, 1)) hits.push_back(i);
        }
    } else {
        const QByteArray needle = q.toUtf8().toLower();
        auto contains = [&](std::string_view s) {
            return QByteArray::fromRawData(s.data(), qsizetype(s.size())).toLower().contains(needle);
        };
        std::vector<char> frameMatch(trace.frames().size() + 1, 0);
        for (size_t f = 0; f < trace.frames().size(); ++f) {
            const Frame& fr = trace.frames()[f];
            frameMatch[f + 1] = contains(trace.string(fr.function)) || contains(trace.string(fr.file));
        }
        std::vector<char> stackMatch(trace.stackCount(), 0);
        for (uint32_t s = 1; s < trace.stackCount(); ++s)
            for (FrameId f : trace.stack(StackId(s)))
                if (f.value < frameMatch.size() && frameMatch[f.value]) {
                    stackMatch[s] = 1;
                    break;
                }
        for (uint32_t i = 0; i < tl.intervals.size(); ++i) {
            if ((i & 0xffff) == 0 && cancel && cancel->load()) return out;
            const uint32_t s = tl.intervals[i].stack.value;
            if (s < stackMatch.size() && stackMatch[s]) hits.push_back(i);
        }
    }
    out.total_matches = hits.size();
    const size_t keep = std::min(limit, hits.size());
    std::partial_sort(hits.begin(), hits.begin() + ptrdiff_t(keep), hits.end(), [&](uint32_t a, uint32_t b) {
        return tl.intervals[a].size != tl.intervals[b].size ? tl.intervals[a].size > tl.intervals[b].size : a < b;
    });
    hits.resize(keep);
    out.intervals = std::move(hits);
    return out;
}

}  // namespace memscope::gui
