#include "memscope/ranks/open_ranks.h"

#include <filesystem>

#include "memscope/open/open_each.h"
#include "memscope/open/open_run.h"
#include "memscope/ranks/digest_trace.h"
#include "memscope/ranks/rank_identity.h"

namespace memscope {
namespace fs = std::filesystem;
namespace {

std::string folderName(const std::string& path) {
    std::error_code ec;
    std::string name = fs::path(path).lexically_normal().filename().string();
    if (name.empty() || name == ".")
        name = fs::absolute(path, ec).lexically_normal().parent_path().filename().string();
    return name;
}

}  // namespace

Result<RankRun> openRanks(const std::string& folder, const PluginRegistry& registry,
                          const TaskContext& ctx, unsigned threads) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) return makeError(folder + ": not a folder");
    const std::vector<std::string> files = traceFilesIn(folder, registry);
    if (files.empty()) return makeError(folder + ": the folder holds no trace memscope can read");

    RankRun run;
    run.path = folder;
    std::vector<std::optional<RankDigest>> digests(files.size());
    std::vector<std::optional<RankFailure>> failures(files.size());
    std::vector<std::vector<LoadWarning>> warnings(files.size());
    std::vector<std::string> names(files.size());
    OpenEachOptions options;
    options.threads = threads;
    openEach(files, registry, ctx, options, [&](size_t i, Result<OpenedTrace> opened) {
        // Each index is written by one worker only: no lock needed.
        if (!opened) {
            failures[i] = RankFailure{files[i], opened.message()};
            return;
        }
        const Trace& trace = *opened->trace;
        const std::string stem = fs::path(files[i]).stem().string();
        names[i] = trace.metadata.name;
        if (trace.digest) {
            // Made where the trace is (memscope-cli digest): read, not reduced.
            auto d = rankDigestOf(trace, files[i]);
            if (!d) {
                failures[i] = RankFailure{files[i], d.message()};
                return;
            }
            digests[i] = std::move(*d);
        } else {
            digests[i] = digestRank(trace, *opened->timeline, files[i],
                                    trace.metadata.name.empty() ? stem : trace.metadata.name);
        }
        warnings[i] = std::move(opened->warnings);
    });
    if (ctx.cancelled()) return cancelledError();
    for (size_t i = 0; i < files.size(); ++i) {
        if (failures[i]) run.failures.push_back(std::move(*failures[i]));
        if (!digests[i]) continue;
        for (LoadWarning& w : warnings[i]) {
            w.message = digests[i]->name + ": " + w.message;
            run.warnings.push_back(std::move(w));
        }
        run.ranks.push_back(std::move(*digests[i]));
    }
    if (run.ranks.empty()) return makeError(run.failures.front().message);
    sortRanks(run.ranks);
    checkRankIdentity(run);
    // The run is the script its ranks ran, where they say and agree.
    const std::string script = scriptOfRanks(names);
    run.name = !script.empty() ? script : folderName(folder);
    return run;
}

RankRun ranksOfRun(const OpenedRun& run) {
    RankRun ranks;
    ranks.path = run.path;
    ranks.name = run.name;
    if (!run.folder || run.parts.size() < 2) return ranks;
    std::vector<std::string> names;
    for (const OpenedTrace& part : run.parts) {
        if (!part.trace || !part.timeline) {
            ranks.ranks.clear();
            return ranks;
        }
        const std::string& name = part.trace->metadata.name;
        // A digest keeps its run's envelope and per-phase peaks: read them,
        // as openRanks does, not the few events alive at its peak (a folder
        // of digests drew an empty heat map).
        if (part.trace->digest)
            if (auto d = rankDigestOf(*part.trace, part.path)) {
                ranks.ranks.push_back(std::move(*d));
                names.push_back(name);
                continue;
            }
        ranks.ranks.push_back(
            digestRank(*part.trace, *part.timeline, part.path,
                       name.empty() ? fs::path(part.path).stem().string() : name));
        names.push_back(name);
    }
    if (const std::string script = scriptOfRanks(names); !script.empty()) ranks.name = script;
    checkRankIdentity(ranks);
    return ranks;
}

}  // namespace memscope
