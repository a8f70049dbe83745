#pragma once
// What the what-if tests share: a hand-built run opened as the CLI opens it,
// its policies predicted with their traces kept, and live bytes at a time.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memscope/open/open_run.h"
#include "memscope/whatif/whatif.h"

namespace memscope::testutil {

struct Opened {
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const Timeline> timeline;
};

inline Opened open(Trace t) {
    auto o = openTrace(std::move(t), "full.memscope");
    EXPECT_TRUE(o.ok()) << o.message();
    return {o->trace, o->timeline};
}

// `names` predicted from `o`; `keep`: each row's trace and timeline kept.
inline WhatIfReport predict(const Opened& o, std::vector<std::string> names, bool keep = true) {
    auto policies = parseWhatIfPolicies(names);
    EXPECT_TRUE(policies.ok()) << policies.message();
    WhatIfOptions options;
    options.keep_traces = keep;
    auto r = whatIf(*o.trace, *o.timeline, "full.memscope", *policies, options);
    EXPECT_TRUE(r.ok()) << r.message();
    return std::move(*r);
}

// Live bytes on device 0 at time x.
inline int64_t liveAt(const Timeline& tl, int64_t x) {
    return tl.device(0)->live.valueAt(x);
}

}  // namespace memscope::testutil
