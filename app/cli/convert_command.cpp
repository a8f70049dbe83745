// memscope-cli convert IN OUT [--to FORMAT]: any importer to any exporter.
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli_common.h"
#include "commands.h"

namespace memscope::cli {
namespace {

void printHelp(std::FILE* out) {
    std::fprintf(out,
                 "usage: memscope-cli convert IN OUT [--to FORMAT]\n\n"
                 "Reads IN with the importer that recognizes it and writes OUT with an exporter:\n"
                 "the one named by --to, else the one whose extension ends OUT.\n\n"
                 "importers:\n");
    for (const Importer* i : registry().importers()) {
        std::string exts;
        for (const auto& e : i->extensions()) exts += (exts.empty() ? "" : " ") + e;
        std::fprintf(out, "  %-18s %s (%s)\n", i->id().c_str(), i->description().c_str(), exts.c_str());
    }
    std::fprintf(out, "exporters (--to):\n");
    for (const Exporter* e : registry().exporters())
        std::fprintf(out, "  %-18s %s (%s)\n", e->id().c_str(), e->description().c_str(), e->extension().c_str());
    std::fprintf(out, "\nexit status: 0 converted, 1 usage error, 2 IN unreadable or OUT not written\n");
}

int usage(const std::string& message) {
    std::fprintf(stderr, "memscope-cli convert: %s (see memscope-cli convert --help)\n", message.c_str());
    return 1;
}

}  // namespace

int runConvert(std::span<const std::string> args) {
    std::string in, out, format;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            printHelp(stdout);
            return 0;
        }
        if (a == "--to") {
            if (i + 1 >= args.size()) return usage("--to needs a FORMAT");
            format = args[++i];
        } else if (a.starts_with("--to=")) {
            format = a.substr(5);
        } else if (a.starts_with("-") && a != "-") {
            return usage("unknown option '" + a + "'");
        } else if (in.empty()) {
            in = a;
        } else if (out.empty()) {
            out = a;
        } else {
            return usage("too many arguments ('" + a + "')");
        }
    }
    if (in.empty() || out.empty()) return usage("needs IN and OUT");

    const Exporter* exporter = nullptr;
    if (!format.empty()) {
        exporter = registry().exporter(format);
        if (!exporter) return usage("no exporter named '" + format + "'");
    } else {
        auto found = registry().exporterForPath(out);
        if (!found) return usage(found.message() + "; name one with --to");
        exporter = *found;
    }
    std::error_code ec;
    if (std::filesystem::equivalent(in, out, ec)) return usage("IN and OUT are the same file");

    auto trace = loadWithProgress(in);
    if (!trace) {
        std::fprintf(stderr, "memscope-cli convert: %s\n", trace.message().c_str());
        return 2;
    }
    if (auto written = exporter->exportTrace(*trace, out, {}); !written) {
        std::fprintf(stderr, "memscope-cli convert: %s\n", written.message().c_str());
        return 2;
    }
    std::fprintf(stderr, "memscope-cli convert: %s (%s, %zu events) -> %s (%s)\n", in.c_str(),
                 trace->metadata.source_format.c_str(), trace->events.size(), out.c_str(),
                 exporter->id().c_str());
    return 0;
}

}  // namespace memscope::cli
