// memscope-cli summary FILE... [--json]
#include <cstdio>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "json_writer.h"
#include "memscope/summary.h"
#include "memscope/timeline.h"

namespace memscope::cli {
namespace {

constexpr const char* kHelp =
    "usage: memscope-cli summary FILE... [--json]\n\n"
    "Per device: reserved and live bytes at the end, the peak of live bytes (as\n"
    "PyTorch memory_viz's Active Memory Timeline counts them), when it happened,\n"
    "and what was live then by category.\n\n"
    "  --json   print JSON instead of a table\n\n"
    "A file that cannot be read is reported on stderr, the others are still\n"
    "summarized, and the exit code is 2.\n";

struct FileSummary {
    std::string path;
    std::string format;  // the importer that read the file
    std::string source;  // where the data was first recorded (a native trace's recorder)
    TraceSummary summary;
    std::vector<std::string> warnings;
};

std::string orDash(const std::optional<uint64_t>& v) { return v ? formatBytes(int64_t(*v)) : "-"; }

void printTable(const FileSummary& f) {
    if (f.source.empty() || f.source == f.format) std::printf("%s  (%s)\n", f.path.c_str(), f.format.c_str());
    else std::printf("%s  (%s, from %s)\n", f.path.c_str(), f.format.c_str(), f.source.c_str());
    for (const auto& w : f.warnings) std::printf("  warning: %s\n", w.c_str());
    if (f.summary.devices.empty()) std::printf("  no devices: the trace holds no events and no segments\n");
    for (const auto& [device, d] : f.summary.devices) {
        std::printf("  device %d%s\n", device, device < 0 ? " (host)" : "");
        std::printf("    peak active      %s", formatBytes(d.peak_active_bytes).c_str());
        if (d.peak_event_index < 0) std::printf("  (before the first event)\n");
        else std::printf("  at event %lld%s\n", (long long)d.peak_event_index,
                         d.peak_time_us ? (", " + std::to_string(*d.peak_time_us) + " us").c_str() : "");
        std::printf("    final active     %s\n", orDash(d.final_active_bytes).c_str());
        std::printf("    reserved         %s", orDash(d.reserved_bytes).c_str());
        if (d.segments) std::printf("  in %llu segments", (unsigned long long)*d.segments);
        std::printf("\n    events           %llu  (alloc %llu, free_completed %llu, segment_alloc %llu, oom %llu)\n",
                    (unsigned long long)d.trace_entries, (unsigned long long)d.alloc_count,
                    (unsigned long long)d.free_completed_count, (unsigned long long)d.segment_alloc_count,
                    (unsigned long long)d.oom_count);
        if (d.first_time_us && d.last_time_us)
            std::printf("    duration         %.3f s\n", double(*d.last_time_us - *d.first_time_us) / 1e6);
        bool any = false;
        for (Category c : kAllCategories) {
            const int64_t bytes = d.categories_at_peak[index(c)];
            if (bytes == 0) continue;
            if (!any) std::printf("    at the peak\n");
            any = true;
            const auto name = toString(c);
            std::printf("      %-16.*s %s\n", int(name.size()), name.data(), formatBytes(bytes).c_str());
        }
    }
}

void writeJson(JsonWriter& j, const FileSummary& f) {
    j.beginObject().key("path").value(f.path).key("format").value(f.format);
    if (!f.source.empty() && f.source != f.format) j.key("source").value(f.source);
    if (!f.warnings.empty()) {
        j.key("warnings").beginArray();
        for (const auto& w : f.warnings) j.value(w);
        j.endArray();
    }
    j.key("devices").beginObject();
    for (const auto& [device, d] : f.summary.devices) {
        j.key(std::to_string(device)).beginObject();
        j.key("segments").value(d.segments);
        j.key("reserved_bytes").value(d.reserved_bytes);
        j.key("final_active_bytes").value(d.final_active_bytes);
        j.key("trace_entries").value(d.trace_entries);
        j.key("alloc_count").value(d.alloc_count);
        j.key("free_completed_count").value(d.free_completed_count);
        j.key("segment_alloc_count").value(d.segment_alloc_count);
        j.key("oom_count").value(d.oom_count);
        j.key("peak_active_bytes").value(d.peak_active_bytes);
        j.key("peak_event_index").value(d.peak_event_index);
        j.key("peak_time_us").value(d.peak_time_us);
        j.key("first_time_us").value(d.first_time_us);
        j.key("last_time_us").value(d.last_time_us);
        j.key("categories_at_peak").beginObject();
        for (Category c : kAllCategories) j.key(toString(c)).value(d.categories_at_peak[index(c)]);
        j.endObject().endObject();
    }
    j.endObject().endObject();
}

}  // namespace

int runSummary(std::span<const std::string> args) {
    bool json = false;
    std::vector<std::string> paths;
    bool options = true;
    for (const std::string& a : args) {
        if (options && (a == "--help" || a == "-h")) {
            std::fputs(kHelp, stdout);
            return 0;
        } else if (options && a == "--json") {
            json = true;
        } else if (options && a == "--") {
            options = false;
        } else if (options && a.size() > 1 && a[0] == '-') {
            std::fprintf(stderr, "memscope-cli summary: unknown option '%s'\n\n%s", a.c_str(), kHelp);
            return 1;
        } else {
            paths.push_back(a);
        }
    }
    if (paths.empty()) {
        std::fprintf(stderr, "memscope-cli summary: no file given\n\n%s", kHelp);
        return 1;
    }

    int exitCode = 0;
    std::vector<FileSummary> done;
    for (const std::string& path : paths) {
        const Importer* importer = nullptr;
        auto trace = loadWithProgress(path, &importer);
        if (!trace) {
            std::fprintf(stderr, "memscope-cli summary: %s\n", trace.message().c_str());
            exitCode = 2;
            continue;
        }
        auto timeline = Timeline::build(*trace);
        if (!timeline) {
            std::fprintf(stderr, "memscope-cli summary: %s: %s\n", path.c_str(), timeline.message().c_str());
            exitCode = 2;
            continue;
        }
        FileSummary f{path, importer ? importer->id() : trace->metadata.source_format,
                      trace->metadata.source_format, summarize(*trace, **timeline), {}};
        if (const std::string* w = trace->metadata.property("load_warning")) f.warnings.push_back(*w);
        if (!json) {
            if (!done.empty()) std::printf("\n");
            printTable(f);
        }
        done.push_back(std::move(f));
    }
    if (json) {
        JsonWriter j;
        j.beginObject().key("files").beginArray();
        for (const auto& f : done) writeJson(j, f);
        j.endArray().endObject();
        std::printf("%s\n", j.str().c_str());
    }
    return exitCode;
}

}  // namespace memscope::cli
