// Prints what record_apply_test.py checks of a trace `record --apply` made,
// through the core API, one JSON object on stdout: the run's name, the
// properties the merge set from the hook's "apply" ("applied_policy",
// "applied.*", "apply.*"), the job's "argv" and "cwd", and the paths of the
// modules with recompute scopes.
//
// usage: memscope_record_apply_facts TRACE
#include <cstdio>
#include <set>
#include <string>

#include "memscope/base/json_text.h"
#include "memscope/open/open_run.h"

int main(int argc, char** argv) {
    using namespace memscope;
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s TRACE\n", argv[0]);
        return 2;
    }
    auto opened = openTrace(argv[1], PluginRegistry());
    if (!opened) {
        std::fprintf(stderr, "%s\n", opened.message().c_str());
        return 1;
    }
    const Trace& trace = *opened->trace;
    std::string out = "{\"name\":";
    appendJsonString(out, trace.metadata.name);
    out += ",\"properties\":{";
    bool first = true;
    for (const auto& [key, value] : trace.metadata.properties) {
        if (key != "applied_policy" && !key.starts_with("applied.") && !key.starts_with("apply.") &&
            key != "argv" && key != "cwd")
            continue;
        out += first ? "" : ",";
        first = false;
        appendJsonString(out, key);
        out += ':';
        appendJsonString(out, value);
    }
    out += "},\"recomputed\":[";
    std::set<std::string> recomputed;
    for (const ModuleScope& s : trace.modules.scopes)
        if (const Module* m = trace.modules.module(s.module);
            m && s.kind == ModuleScopeKind::Recompute)
            recomputed.insert(std::string(trace.string(m->path)));
    first = true;
    for (const std::string& path : recomputed) {
        out += first ? "" : ",";
        first = false;
        appendJsonString(out, path);
    }
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
    return 0;
}
