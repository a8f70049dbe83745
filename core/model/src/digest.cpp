#include "memscope/model/digest.h"

#include "memscope/model/trace.h"

namespace memscope {

void applyDigestInferences(Trace& t) {
    if (!t.digest) return;
    for (const DigestInference& d : t.digest->inferred) {
        if (d.event >= t.events.size() || d.rule == CategoryRule::Recorded ||
            int(d.rule) >= kCategoryRuleCount ||
            t.events[size_t(d.event)].category != Category::Unknown)
            continue;  // a damaged entry: the event stays unknown
        if (t.inferred_categories.size() < t.events.size())
            t.inferred_categories.resize(t.events.size());
        t.inferred_categories[size_t(d.event)] = {d.category, d.rule};
    }
}

}  // namespace memscope
