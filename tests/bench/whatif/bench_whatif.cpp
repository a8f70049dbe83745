// memscope-bench-whatif: the what-if simulator against the trainer's ground
// truth. For the quick mlp and gpt (and, with --paper, the literature's MLP:
// d=1024, 24 blocks, input (8,512,1024), fp32) it runs full-save and every
// policy, predicts each from the full-save run alone, and prints predicted
// against measured: the peak, the forward/backward/optimizer peaks, the
// forward+backward increase, recompute time and the frontier.
//
//   memscope-bench-whatif [--paper] [--steps N] [--dir DIR]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "config.h"
#include "whatif_truth.h"

using namespace memscope;

int main(int argc, char** argv) {
    bool paper = false;
    int steps = 4;
    std::string dir = (std::filesystem::temp_directory_path() / "memscope-bench-whatif").string();
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--paper") {
            paper = true;
        } else if (a == "--steps" && i + 1 < argc) {
            steps = std::max(2, std::atoi(argv[++i]));
        } else if (a == "--dir" && i + 1 < argc) {
            dir = argv[++i];
        } else {
            std::printf(
                "usage: %s [--paper] [--steps N] [--dir DIR]\n"
                "  the what-if simulator against the trainer's measured runs: quick mlp and gpt,\n"
                "  every layer-set policy and opt-in-bwd, alone and composed; --paper adds the\n"
                "  literature's MLP (full and block, 2 steps: about 2 minutes a step here)\n",
                argv[0]);
            return a == "--help" || a == "-h" ? 0 : 1;
        }
    }
    const std::vector<std::string> policies = {"block",
                                               "sqrt",
                                               "segments:2",
                                               "segments:4",
                                               "opt-in-bwd",
                                               "block+opt-in-bwd",
                                               "sqrt+opt-in-bwd",
                                               "segments:2+opt-in-bwd",
                                               "segments:4+opt-in-bwd",
                                               "selective",
                                               "save:matmul"};
    int failures = 0;
    for (trainer::ModelKind kind : {trainer::ModelKind::Mlp, trainer::ModelKind::Gpt}) {
        trainer::TrainConfig config;
        config.steps = steps;
        config.threads = 1;
        config.model = *trainer::preset(kind, "quick");
        auto table = whatif_truth::run(config, "quick", policies,
                                       dir + (kind == trainer::ModelKind::Gpt ? "/gpt" : "/mlp"));
        if (!table) {
            std::fprintf(stderr, "memscope-bench-whatif: %s\n", table.message().c_str());
            ++failures;
            continue;
        }
        std::fputs(whatif_truth::format(*table).c_str(), stdout);
        std::fputs("\n", stdout);
    }
    if (paper) {
        trainer::TrainConfig config;
        config.steps = 2;
        config.model = *trainer::preset(trainer::ModelKind::Mlp, "paper");
        auto table = whatif_truth::run(config, "paper", {"block"}, dir + "/paper");
        if (!table) {
            std::fprintf(stderr, "memscope-bench-whatif: %s\n", table.message().c_str());
            ++failures;
        } else {
            std::fputs(whatif_truth::format(*table).c_str(), stdout);
            const auto& r = table->rows.front();
            std::printf(
                "  paper MLP, block: forward+backward increase predicted %.0f MiB, measured "
                "%.0f MiB (%+.1f%%)\n",
                double(r.predicted_increase) / 1048576.0, double(r.measured_increase) / 1048576.0,
                r.increaseError() * 100);
        }
    }
    return failures ? 1 : 0;
}
