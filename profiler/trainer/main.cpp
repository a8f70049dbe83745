// memscope-train: trains the reference models under each checkpointing policy
// and writes one labelled native trace per policy, a table and a JSON summary.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "config.h"
#include "report.h"
#include "trainer.h"

namespace fs = std::filesystem;
using namespace memscope::trainer;

namespace {

int fail(const std::string& message, int code) {
    std::cerr << "memscope-train: " << message << "\n";
    return code;
}

bool writeFile(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
    auto parsed = parseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
    if (!parsed) return fail(parsed.message() + " (see --help)", 1);
    const CliOptions& o = *parsed;
    if (o.help) {
        std::cout << usage();
        return 0;
    }
    if (o.train.device != "cpu" && !cudaAvailable())
        return fail("--device " + o.train.device +
                        ": CUDA is not available (this LibTorch has no CUDA support or no GPU "
                        "is visible); use --device cpu",
                    2);

    // Traces go to --out; without it they are written to a scratch folder
    // (the table is computed from them) and removed afterwards.
    fs::path dir;
    bool scratch = false;
    if (o.capture) {
        std::error_code ec;
        if (o.out_dir) {
            dir = *o.out_dir;
        } else {
            dir = fs::temp_directory_path(ec) / ("memscope-train-" + std::to_string(::getpid()));
            scratch = true;
        }
        fs::create_directories(dir, ec);
        if (ec) return fail("cannot create " + dir.string() + ": " + ec.message(), 2);
    }

    std::vector<PolicyReport> reports;
    int status = 0;
    // How many runs follow: the GUI's generate dialog sizes its progress by it.
    std::cerr << "memscope-train: " << o.policies.size()
              << (o.policies.size() == 1 ? " run" : " runs") << std::endl;
    for (const Policy& policy : o.policies) {
        RunOptions run;
        run.preset = o.preset;
        const std::string stem =
            std::string(modelName(o.train.model.kind)) + "-" + policyFileStem(policy);
        if (o.capture) run.trace_path = (dir / (stem + ".memscope")).string();
        if (o.train.device != "cpu" && o.out_dir)
            run.cuda_snapshot_path = (dir / (stem + ".pickle")).string();
        std::cerr << "memscope-train: " << stem << " ..." << std::endl;
        auto result = runPolicy(o.train, policy, run);
        if (!result) {
            std::cerr << "memscope-train: " << result.message() << "\n";
            status = 1;
            continue;
        }
        auto report = makeReport(std::move(result.value()));
        if (!report) {
            std::cerr << "memscope-train: " << stem << ": " << report.message() << "\n";
            status = 1;
            continue;
        }
        reports.push_back(std::move(report.value()));
    }
    compareToFull(reports);
    markFrontier(reports);
    printTable(std::cout, o.train, o.preset, reports);
    std::optional<BudgetReport> budget;
    if (o.budget_bytes) {
        budget = answerBudget(reports, *o.budget_bytes);
        std::cout << "\n" << budget->line << "\n";
    }

    const std::string json = toJson(o.train, o.preset, reports, budget);
    if (o.json_path && !writeFile(*o.json_path, json))
        status = fail("cannot write " + *o.json_path, 1);
    if (o.out_dir && !writeFile(dir / "summary.json", json))
        status = fail("cannot write " + (dir / "summary.json").string(), 1);
    if (scratch) {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    return status;
}
