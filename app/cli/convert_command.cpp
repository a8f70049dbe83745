// memscope-cli convert IN OUT [--to FORMAT]: any importer to any exporter.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "memscope/base/text_escape.h"

namespace memscope::cli {
namespace {

struct ConvertOptions {
    std::string in, out, format;
};

int usage(const std::string& message) {
    std::fprintf(stderr, "memscope-cli convert: %s (see memscope-cli convert --help)\n",
                 message.c_str());
    return 1;
}

std::string formatsText() {
    std::string out = "Importers:\n";
    for (const Importer* i : registry().importers()) {
        std::string exts;
        for (const auto& e : i->extensions()) exts += (exts.empty() ? "" : " ") + e;
        char line[256];
        std::snprintf(line, sizeof line, "  %-18s %s (%s)\n", i->id().c_str(),
                      i->description().c_str(), exts.c_str());
        out += line;
    }
    out += "Exporters (--to):\n";
    for (const Exporter* e : registry().exporters()) {
        char line[256];
        std::snprintf(line, sizeof line, "  %-18s %s (%s)\n", e->id().c_str(),
                      e->description().c_str(), e->extension().c_str());
        out += line;
    }
    return out;
}

int run(const ConvertOptions& o) {
    const Exporter* exporter = nullptr;
    if (!o.format.empty()) {
        exporter = registry().exporter(o.format);
        if (!exporter) return usage("no exporter named '" + o.format + "'");
    } else {
        auto found = registry().exporterForPath(o.out);
        if (!found) return usage(found.message() + "; name one with --to");
        exporter = *found;
    }
    std::error_code ec;
    if (std::filesystem::equivalent(o.in, o.out, ec)) return usage("IN and OUT are the same file");
    if (std::filesystem::is_directory(o.in, ec))
        return usage(o.in +
                     " is a folder: convert takes one trace file (convert each rank's file)");

    OpenOptions options;
    options.timeline = false;  // a conversion needs the trace, not its analysis
    auto opened = openWithProgress(o.in, options);
    if (!opened) {
        std::fprintf(stderr, "memscope-cli convert: %s\n", terminalText(opened.message()).c_str());
        return 2;
    }
    // Warnings are said here, never written into OUT.
    printWarnings("convert", *opened);
    const OpenedTrace& part = opened->parts.front();
    if (auto written = exporter->exportTrace(*part.trace, o.out, {}); !written) {
        std::fprintf(stderr, "memscope-cli convert: %s\n", terminalText(written.message()).c_str());
        return 2;
    }
    std::fprintf(stderr, "memscope-cli convert: %s (%s, %zu events) -> %s (%s)\n", o.in.c_str(),
                 part.format.c_str(), part.trace->events.size(), o.out.c_str(),
                 exporter->id().c_str());
    return 0;
}

}  // namespace

Command addConvert(CLI::App& parent) {
    auto o = std::make_shared<ConvertOptions>();
    CLI::App* app = parent.add_subcommand("convert", "any importer to any exporter");
    app->add_option("IN", o->in, "the trace to read")->required();
    app->add_option("OUT", o->out, "the file to write")->required();
    app->add_option("--to", o->format, "exporter id (see the list below)");
    // The formats come from the plugins, so the footer is built when help is shown.
    app->footer([] {
        return std::string(
                   "Reads IN with the importer that recognizes its bytes and writes OUT with an "
                   "exporter: the one\n"
                   "named by --to, else the one whose extension ends OUT."
                   "\n\n") +
               formatsText() +
               "\nExit status: 0 converted, 1 usage error, 2 IN unreadable or OUT not written.";
    });
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
