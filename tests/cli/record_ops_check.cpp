// Checks the op scopes of a trace `memscope-cli record` made of
// record_scripts/train_linear_softmax.py (Linear 300 -> 700 on 64 rows, then
// softmax), through the core API: run by record_ops_test.py.
//
// usage: memscope_record_ops_check TRACE recorded
//        memscope_record_ops_check TRACE none
//
//   recorded  op scopes with source recorded, among them aten::addmm (or
//             aten::mm) and aten::_softmax; OpAttribution gives the first
//             host allocation of the Linear's output size (64 x 700 floats)
//             to a matmul op, and the next one to aten::_softmax
//   none      no recorded op scopes
// Prints what it found; exits 1 with "FAIL: ..." lines when a check fails.
#include <cstdio>
#include <set>
#include <string>

#include "memscope/model/op_attribution.h"
#include "memscope/open/open_run.h"

namespace {

using namespace memscope;

int failures = 0;

void check(bool ok, const std::string& what) {
    if (!ok) {
        std::printf("FAIL: %s\n", what.c_str());
        ++failures;
    }
}

constexpr uint64_t kLinearOutputBytes = 64 * 700 * 4;

bool isMatmul(std::string_view name) {
    return name == "aten::addmm" || name == "aten::mm";
}

void checkRecorded(const Trace& trace) {
    check(trace.ops.source == OpSource::Recorded,
          "op source is " + std::string(toString(trace.ops.source)));
    std::set<std::string_view> names;
    for (const OpScope& s : trace.ops.scopes) names.insert(trace.string(s.name));
    std::printf("%zu op scopes, %zu names\n", trace.ops.scopes.size(), names.size());
    check(names.contains("aten::addmm") || names.contains("aten::mm"), "no aten::addmm scope");
    check(names.contains("aten::_softmax"), "no aten::_softmax scope");

    const OpAttribution ops(trace);
    std::vector<std::string> made;  // ops of the allocations of the output size, in order
    for (uint64_t i = 0; i < trace.events.size() && made.size() < 2; ++i) {
        const Event& e = trace.events[i];
        if (e.kind != EventKind::Alloc || e.device != -1 || e.size != kLinearOutputBytes) continue;
        const auto hit = ops.ofEvent(i, e.time);
        made.push_back(hit ? std::string(trace.string(hit->name)) : std::string("(none)"));
    }
    check(made.size() == 2, "fewer than two allocations of the Linear's output size");
    if (made.size() < 2) return;
    std::printf("linear output made by %s, softmax output by %s\n", made[0].c_str(),
                made[1].c_str());
    check(isMatmul(made[0]), "the Linear's output was made by " + made[0]);
    check(made[1] == "aten::_softmax", "the softmax's output was made by " + made[1]);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s TRACE recorded|none\n", argv[0]);
        return 2;
    }
    auto opened = openTrace(argv[1], PluginRegistry());
    if (!opened) {
        std::printf("FAIL: %s\n", opened.message().c_str());
        return 1;
    }
    const Trace& trace = *opened->trace;
    const std::string what = argv[2];
    if (what == "recorded") {
        checkRecorded(trace);
    } else if (what == "none") {
        check(trace.ops.source != OpSource::Recorded && trace.ops.scopes.empty(),
              "the trace has " + std::to_string(trace.ops.scopes.size()) + " op scopes");
    } else {
        std::fprintf(stderr, "unknown check %s\n", what.c_str());
        return 2;
    }
    return failures == 0 ? 0 : 1;
}
