// memscope-train as a program: --help and usage errors, and the summary.json
// of a quick run of every policy, its peaks_by_phase read back with RapidJSON.

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Output {
    int status = -1;   // the exit status; -1 when it did not exit normally
    std::string text;  // stdout and stderr together
};

Output runTrainer(const std::string& args) {
    Output out;
    const std::string command = std::string("'") + MEMSCOPE_TRAIN_EXE + "' " + args + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.text.append(buf, n);
    const int status = ::pclose(pipe);
    if (status != -1 && WIFEXITED(status)) out.status = WEXITSTATUS(status);
    return out;
}

std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const rapidjson::Value* member(const rapidjson::Value& object, const char* name) {
    if (!object.IsObject()) return nullptr;
    auto it = object.FindMember(name);
    return it == object.MemberEnd() ? nullptr : &it->value;
}

// Every policy of `model` at the quick preset, with --out: summary.json's
// runs[i].peaks_by_phase has the three phases, the highest of them is the
// run's peak (the quick runs peak inside a phase), and each increase is
// against the phase's start.
void checkSummary(const std::string& model) {
    const fs::path dir = fs::temp_directory_path() / ("memscope-trainer-cli-" + model);
    fs::remove_all(dir);
    const Output run = runTrainer("--model " + model +
                                  " --policy full,block,selective,opt-in-bwd,block+opt-in-bwd,"
                                  "selective+opt-in-bwd --preset quick --out '" +
                                  dir.string() + "'");
    ASSERT_EQ(run.status, 0) << run.text;
    // The terminal report has the per-phase table.
    EXPECT_NE(run.text.find("peak by phase"), std::string::npos) << run.text;

    const std::string text = readFile(dir / "summary.json");
    rapidjson::Document doc;
    doc.Parse(text.c_str());
    ASSERT_FALSE(doc.HasParseError()) << text;
    for (const char* key : {"model", "config", "preset", "device", "dtype", "steps", "seed"})
        EXPECT_NE(member(doc, key), nullptr) << key;
    const rapidjson::Value* runs = member(doc, "runs");
    ASSERT_TRUE(runs && runs->IsArray());
    ASSERT_EQ(runs->Size(), 6u);
    for (const rapidjson::Value& r : runs->GetArray()) {
        const std::string policy = member(r, "policy")->GetString();
        for (const char* key :
             {"trace", "peak_bytes", "peak_time_us", "peak_phase", "peak_phase_kind", "peak_step",
              "peak_by_category", "activation_bytes_at_forward_end", "max_gradient_bytes",
              "mean_step_ms", "mean_recompute_ms", "overhead_vs_full", "step_ms", "recompute_ms",
              "losses"})
            EXPECT_NE(member(r, key), nullptr) << policy << ": " << key;
        const rapidjson::Value* peaks = member(r, "peaks_by_phase");
        ASSERT_TRUE(peaks && peaks->IsObject()) << policy;
        int64_t highest = 0;
        for (const char* phase : {"forward", "backward", "optimizer"}) {
            const rapidjson::Value* p = member(*peaks, phase);
            ASSERT_TRUE(p && p->IsObject()) << policy << ": " << phase;
            for (const char* key :
                 {"bytes", "time_us", "increase_bytes", "start_bytes", "phase", "by_category"})
                ASSERT_NE(member(*p, key), nullptr) << policy << ": " << phase << "." << key;
            const int64_t bytes = member(*p, "bytes")->GetInt64();
            EXPECT_EQ(member(*p, "increase_bytes")->GetInt64(),
                      bytes - member(*p, "start_bytes")->GetInt64())
                << policy << ": " << phase;
            highest = std::max(highest, bytes);
        }
        EXPECT_EQ(highest, member(r, "peak_bytes")->GetInt64())
            << policy << ": the peak, in " << member(r, "peak_phase")->GetString()
            << ", is the highest phase peak";
    }
    fs::remove_all(dir);
}

}  // namespace

TEST(TrainerCli, HelpListsTheOptions) {
    const Output help = runTrainer("--help");
    EXPECT_EQ(help.status, 0) << help.text;
    for (const char* option :
         {"--model",  "--policy", "--preset", "--out",     "--json",       "--steps",  "--dtype",
          "--device", "--seed",   "--lr",     "--threads", "--no-capture", "--layers", "--hidden",
          "--heads",  "--seq",    "--batch",  "--vocab",   "--dropout",    "-h,--help"})
        EXPECT_NE(help.text.find(option), std::string::npos) << option;
    EXPECT_EQ(runTrainer("-h").text, help.text);
}

TEST(TrainerCli, BadValuesExitOneWithAMessage) {
    for (const char* args :
         {"--model resnet", "--policy nonsense", "--preset huge", "--device tpu", "--steps 0",
          "--steps zero", "--dtype fp8", "--dropout 1", "--bogus", "--steps"}) {
        const Output out = runTrainer(args);
        EXPECT_EQ(out.status, 1) << args << ": " << out.text;
        EXPECT_NE(out.text.find("memscope-train: "), std::string::npos) << args << ": " << out.text;
        // Nothing ran.
        EXPECT_EQ(out.text.find(" ..."), std::string::npos) << args << ": " << out.text;
    }
}

TEST(TrainerCli, MlpSummaryHasPeaksByPhase) {
    checkSummary("mlp");
}

TEST(TrainerCli, GptSummaryHasPeaksByPhase) {
    checkSummary("gpt");
}

namespace {

// The main job's demo (scripts/setup-and-run.sh): `--policy all` at the quick
// preset, where activations dominate, and at the wide one, where gradients
// and the optimizer step do. Each policy's peak is at least 5% below
// full-save's at the preset made for it.
void checkDemo(const std::string& model) {
    auto peaks = [&](const std::string& preset) {
        const fs::path dir =
            fs::temp_directory_path() / ("memscope-trainer-demo-" + model + "-" + preset);
        fs::remove_all(dir);
        const Output run = runTrainer("--model " + model + " --policy all --preset " + preset +
                                      " --out '" + dir.string() + "'");
        EXPECT_EQ(run.status, 0) << run.text;
        rapidjson::Document doc;
        doc.Parse(readFile(dir / "summary.json").c_str());
        std::vector<std::pair<std::string, double>> out;
        const rapidjson::Value* runs = doc.HasParseError() ? nullptr : member(doc, "runs");
        if (runs && runs->IsArray())
            for (const rapidjson::Value& r : runs->GetArray())
                out.emplace_back(member(r, "policy")->GetString(),
                                 double(member(r, "peak_bytes")->GetInt64()));
        fs::remove_all(dir);
        return out;
    };
    auto ratio = [](const std::vector<std::pair<std::string, double>>& runs,
                    const std::string& policy) {
        double full = 0, mine = 0;
        for (const auto& [name, bytes] : runs) {
            if (name == "full") full = bytes;
            if (name == policy) mine = bytes;
        }
        return full > 0 ? mine / full : 0.0;
    };
    const auto quick = peaks("quick");
    const auto wide = peaks("wide");
    ASSERT_EQ(quick.size(), 4u);
    ASSERT_EQ(wide.size(), 4u);
    EXPECT_LE(ratio(quick, "block"), 0.95) << model;
    EXPECT_LE(ratio(quick, "selective"), 0.95) << model;
    EXPECT_LE(ratio(wide, "opt-in-bwd"), 0.95) << model;
    // And each leaves the other preset's peak where it is (within 1%).
    EXPECT_NEAR(ratio(quick, "opt-in-bwd"), 1.0, 0.01) << model;
    EXPECT_NEAR(ratio(wide, "block"), 1.0, 0.01) << model;
}

}  // namespace

TEST(TrainerCli, MlpDemoPresetsShowEachPolicyLoweringItsPeak) {
    checkDemo("mlp");
}

TEST(TrainerCli, GptDemoPresetsShowEachPolicyLoweringItsPeak) {
    checkDemo("gpt");
}

namespace {

struct SweepRow {
    std::string policy;
    int64_t peak = 0;
    double step_ms = 0;
    bool on_frontier = false;
};

// Runs memscope-train with `args` and --out, and reads summary.json's runs
// and budget object back.
struct Sweep {
    Output output;
    std::vector<SweepRow> rows;
    rapidjson::Document doc;
};

void runSweep(const std::string& args, const std::string& tag, Sweep& sweep) {
    const fs::path dir = fs::temp_directory_path() / ("memscope-trainer-sweep-" + tag);
    fs::remove_all(dir);
    sweep.output = runTrainer(args + " --out '" + dir.string() + "'");
    ASSERT_EQ(sweep.output.status, 0) << sweep.output.text;
    const std::string text = readFile(dir / "summary.json");
    sweep.doc.Parse(text.c_str());
    ASSERT_FALSE(sweep.doc.HasParseError()) << text;
    const rapidjson::Value* runs = member(sweep.doc, "runs");
    ASSERT_TRUE(runs && runs->IsArray());
    for (const rapidjson::Value& r : runs->GetArray()) {
        SweepRow row;
        row.policy = member(r, "policy")->GetString();
        row.peak = member(r, "peak_bytes")->GetInt64();
        row.step_ms = member(r, "mean_step_ms")->GetDouble();
        const rapidjson::Value* on = member(r, "on_frontier");
        ASSERT_TRUE(on && on->IsBool()) << row.policy;
        row.on_frontier = on->GetBool();
        ASSERT_TRUE(fs::exists(fs::path(member(r, "trace")->GetString()))) << row.policy;
        sweep.rows.push_back(row);
    }
    fs::remove_all(dir);
}

}  // namespace

// --policy sweep --budget: every policy of the set ran and was recorded; the
// frontier flags agree with the definition on the measured table; the budget
// names the fastest run whose peak fits.
TEST(TrainerCli, SweepMarksTheFrontierAndAnswersTheBudget) {
    Sweep sweep;
    // A budget between the smallest and the largest peak of the quick mlp
    // (about 3.8 and 6.5 MiB).
    runSweep("--model mlp --policy sweep --preset quick --budget 5MiB", "mlp", sweep);
    if (HasFatalFailure()) return;
    ASSERT_EQ(sweep.rows.size(), 16u);
    for (const char* name : {"full", "sqrt", "segments:2", "segments:4+opt-in-bwd", "save:matmul",
                             "save:none+opt-in-bwd"}) {
        EXPECT_TRUE(std::any_of(sweep.rows.begin(), sweep.rows.end(), [&](const SweepRow& r) {
            return r.policy == name;
        })) << name;
    }
    for (const SweepRow& a : sweep.rows) {
        bool dominated = false;
        for (const SweepRow& b : sweep.rows)
            dominated = dominated || (b.peak <= a.peak && b.step_ms <= a.step_ms &&
                                      (b.peak < a.peak || b.step_ms < a.step_ms));
        EXPECT_EQ(a.on_frontier, !dominated) << a.policy;
    }
    const rapidjson::Value* budget = member(sweep.doc, "budget");
    ASSERT_TRUE(budget && budget->IsObject());
    const int64_t bytes = member(*budget, "bytes")->GetInt64();
    EXPECT_EQ(bytes, 5 * 1024 * 1024);
    const SweepRow* fastest = nullptr;
    for (const SweepRow& r : sweep.rows)
        if (r.peak <= bytes && (!fastest || r.step_ms < fastest->step_ms)) fastest = &r;
    ASSERT_NE(fastest, nullptr);
    ASSERT_TRUE(member(*budget, "policy")->IsString());
    const std::string chosen = member(*budget, "policy")->GetString();
    const auto row = std::find_if(sweep.rows.begin(), sweep.rows.end(),
                                  [&](const SweepRow& r) { return r.policy == chosen; });
    ASSERT_NE(row, sweep.rows.end());
    EXPECT_LE(row->peak, bytes);
    EXPECT_EQ(row->step_ms, fastest->step_ms);
    EXPECT_TRUE(row->on_frontier);
    EXPECT_EQ(member(*budget, "short_by_bytes")->GetInt64(), 0);
    EXPECT_NE(sweep.output.text.find(chosen + " is the fastest policy that fits"),
              std::string::npos)
        << sweep.output.text;
    EXPECT_NE(sweep.output.text.find("memory against time"), std::string::npos);
}

TEST(TrainerCli, BudgetThatNothingFitsSaysByHowMuch) {
    Sweep sweep;
    runSweep("--model gpt --policy full,block --preset quick --steps 1 --budget 1MiB", "none",
             sweep);
    if (HasFatalFailure()) return;
    ASSERT_EQ(sweep.rows.size(), 2u);
    const rapidjson::Value* budget = member(sweep.doc, "budget");
    ASSERT_TRUE(budget && budget->IsObject());
    EXPECT_TRUE(member(*budget, "policy")->IsNull());
    const int64_t smallest = std::min(sweep.rows[0].peak, sweep.rows[1].peak);
    EXPECT_EQ(member(*budget, "short_by_bytes")->GetInt64(), smallest - 1024 * 1024);
    EXPECT_NE(sweep.output.text.find("no policy fits"), std::string::npos) << sweep.output.text;
}
