// parseHookLog / readHookLog / resolveHookPhases: the Python hook's
// append-only log.jsonl (profiler/pyhook/memscope_hook/log.py) and the steps
// users count, resolved from its records as phases.py's docstring lays out.
#include "memscope/recording/hook_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "../scratch_dir_test.h"

namespace memscope {
namespace {

// Logs as the hook wrote them (loops.py gan 3 and accumulation 3, copied from
// .memscope-hook/<pid>/log.jsonl): the GAN's G optimizer joins the step D
// closed (step 0 is logged twice, the second time longer), and accumulation's
// first iteration is split by its forwards into steps 0, 1 and 2 until the
// optimizer's step record for step 0 replaces them; it ends in a zero_grad.
const char* const kGanLog = R"(
{"t":"phase","kind":"zero_grad","step":0,"start_ns":1796189332352738233,"end_ns":1796189332356221169,"seq":1}
{"t":"phase","kind":"forward","step":0,"start_ns":1796189332356259469,"end_ns":1796189332360279236,"seq":2}
{"t":"phase","kind":"backward","step":0,"start_ns":1796189332360279236,"end_ns":1796189332361209484,"seq":3}
{"t":"phase","kind":"optimizer","step":0,"start_ns":1796189332361222823,"end_ns":1796189332362007515,"seq":4}
{"t":"phase","kind":"step","step":0,"start_ns":1796189332352738233,"end_ns":1796189332362007515,"closed_by":"optimizer","seq":5}
{"t":"phase","kind":"zero_grad","step":1,"start_ns":1796189332362296329,"end_ns":1796189332362347061,"seq":6}
{"t":"phase","kind":"forward","step":1,"start_ns":1796189332362362705,"end_ns":1796189332362550817,"seq":7}
{"t":"phase","kind":"backward","step":1,"start_ns":1796189332362550817,"end_ns":1796189332362735527,"seq":8}
{"t":"phase","kind":"optimizer","step":0,"start_ns":1796189332362741167,"end_ns":1796189332362968957,"seq":9}
{"t":"phase","kind":"step","step":0,"start_ns":1796189332352738233,"end_ns":1796189332362968957,"closed_by":"optimizer","seq":10}
{"t":"phase","kind":"zero_grad","step":1,"start_ns":1796189332363032890,"end_ns":1796189332363079651,"seq":11}
{"t":"phase","kind":"forward","step":1,"start_ns":1796189332363086316,"end_ns":1796189332363237286,"seq":12}
{"t":"phase","kind":"backward","step":1,"start_ns":1796189332363237286,"end_ns":1796189332363348744,"seq":13}
{"t":"phase","kind":"optimizer","step":1,"start_ns":1796189332363351553,"end_ns":1796189332363465486,"seq":14}
{"t":"phase","kind":"step","step":1,"start_ns":1796189332363032890,"end_ns":1796189332363465486,"closed_by":"optimizer","seq":15}
{"t":"phase","kind":"zero_grad","step":2,"start_ns":1796189332363502512,"end_ns":1796189332363521302,"seq":16}
{"t":"phase","kind":"forward","step":2,"start_ns":1796189332363525795,"end_ns":1796189332363611989,"seq":17}
{"t":"phase","kind":"backward","step":2,"start_ns":1796189332363611989,"end_ns":1796189332363715697,"seq":18}
{"t":"phase","kind":"optimizer","step":1,"start_ns":1796189332363718414,"end_ns":1796189332363831551,"seq":19}
{"t":"phase","kind":"step","step":1,"start_ns":1796189332363032890,"end_ns":1796189332363831551,"closed_by":"optimizer","seq":20}
{"t":"phase","kind":"zero_grad","step":2,"start_ns":1796189332363864361,"end_ns":1796189332363882147,"seq":21}
{"t":"phase","kind":"forward","step":2,"start_ns":1796189332363886610,"end_ns":1796189332364077202,"seq":22}
{"t":"phase","kind":"backward","step":2,"start_ns":1796189332364077202,"end_ns":1796189332364188544,"seq":23}
{"t":"phase","kind":"optimizer","step":2,"start_ns":1796189332364192765,"end_ns":1796189332364312628,"seq":24}
{"t":"phase","kind":"step","step":2,"start_ns":1796189332363864361,"end_ns":1796189332364312628,"closed_by":"optimizer","seq":25}
{"t":"phase","kind":"zero_grad","step":3,"start_ns":1796189332364347324,"end_ns":1796189332364367933,"seq":26}
{"t":"phase","kind":"forward","step":3,"start_ns":1796189332364373033,"end_ns":1796189332364448711,"seq":27}
{"t":"phase","kind":"backward","step":3,"start_ns":1796189332364448711,"end_ns":1796189332364540858,"seq":28}
{"t":"phase","kind":"optimizer","step":2,"start_ns":1796189332364543054,"end_ns":1796189332364654075,"seq":29}
{"t":"phase","kind":"step","step":2,"start_ns":1796189332363864361,"end_ns":1796189332364654075,"closed_by":"optimizer","seq":30}
)";

const char* const kAccumulationLog = R"(
{"t":"phase","kind":"forward","step":0,"start_ns":1796189333537206544,"end_ns":1796189333538635187,"seq":1}
{"t":"phase","kind":"backward","step":0,"start_ns":1796189333538635187,"end_ns":1796189333539029326,"seq":2}
{"t":"phase","kind":"step","step":0,"start_ns":1796189333537206544,"end_ns":1796189333539065983,"closed_by":"forward","seq":3}
{"t":"phase","kind":"forward","step":1,"start_ns":1796189333539065983,"end_ns":1796189333539494150,"seq":4}
{"t":"phase","kind":"backward","step":1,"start_ns":1796189333539494150,"end_ns":1796189333539676291,"seq":5}
{"t":"phase","kind":"step","step":1,"start_ns":1796189333539065983,"end_ns":1796189333539693914,"closed_by":"forward","seq":6}
{"t":"phase","kind":"forward","step":2,"start_ns":1796189333539693914,"end_ns":1796189333539833807,"seq":7}
{"t":"phase","kind":"backward","step":2,"start_ns":1796189333539833807,"end_ns":1796189333539905239,"seq":8}
{"t":"phase","kind":"optimizer","step":2,"start_ns":1796189333539915917,"end_ns":1796189333540130038,"seq":9}
{"t":"phase","kind":"step","step":0,"start_ns":1796189333537206544,"end_ns":1796189333540130038,"closed_by":"optimizer","seq":10}
{"t":"phase","kind":"zero_grad","step":1,"start_ns":1796189333540176619,"end_ns":1796189333540226701,"seq":11}
{"t":"phase","kind":"forward","step":1,"start_ns":1796189333540234160,"end_ns":1796189333540318237,"seq":12}
{"t":"phase","kind":"backward","step":1,"start_ns":1796189333540318237,"end_ns":1796189333540402477,"seq":13}
{"t":"phase","kind":"forward","step":1,"start_ns":1796189333540409970,"end_ns":1796189333540465068,"seq":14}
{"t":"phase","kind":"backward","step":1,"start_ns":1796189333540465068,"end_ns":1796189333540528632,"seq":15}
{"t":"phase","kind":"forward","step":1,"start_ns":1796189333540535080,"end_ns":1796189333540585803,"seq":16}
{"t":"phase","kind":"backward","step":1,"start_ns":1796189333540585803,"end_ns":1796189333540644580,"seq":17}
{"t":"phase","kind":"optimizer","step":1,"start_ns":1796189333540653243,"end_ns":1796189333540704326,"seq":18}
{"t":"phase","kind":"step","step":1,"start_ns":1796189333540176619,"end_ns":1796189333540704326,"closed_by":"optimizer","seq":19}
{"t":"phase","kind":"zero_grad","step":2,"start_ns":1796189333540755624,"end_ns":1796189333540779133,"seq":20}
{"t":"phase","kind":"forward","step":2,"start_ns":1796189333540784768,"end_ns":1796189333540848299,"seq":21}
{"t":"phase","kind":"backward","step":2,"start_ns":1796189333540848299,"end_ns":1796189333540938195,"seq":22}
{"t":"phase","kind":"forward","step":2,"start_ns":1796189333540948696,"end_ns":1796189333541015444,"seq":23}
{"t":"phase","kind":"backward","step":2,"start_ns":1796189333541015444,"end_ns":1796189333541075690,"seq":24}
{"t":"phase","kind":"forward","step":2,"start_ns":1796189333541083562,"end_ns":1796189333541133215,"seq":25}
{"t":"phase","kind":"backward","step":2,"start_ns":1796189333541133215,"end_ns":1796189333541187588,"seq":26}
{"t":"phase","kind":"optimizer","step":2,"start_ns":1796189333541192437,"end_ns":1796189333541321524,"seq":27}
{"t":"phase","kind":"step","step":2,"start_ns":1796189333540755624,"end_ns":1796189333541321524,"closed_by":"optimizer","seq":28}
{"t":"phase","kind":"zero_grad","step":3,"start_ns":1796189333541376446,"end_ns":1796189333541405369,"seq":29}
)";

HookPhase hp(HookPhaseKind kind, int32_t step, int64_t start, int64_t end) {
    HookPhase p;
    p.kind = kind;
    p.step = step;
    p.start_ns = start;
    p.end_ns = end;
    return p;
}

// Records numbered 1, 2, ... in the order given (the log's order).
std::vector<HookLogRecordPhase> records(const std::vector<HookPhase>& phases) {
    std::vector<HookLogRecordPhase> out;
    for (const HookPhase& p : phases) out.push_back({uint64_t(out.size() + 1), p});
    return out;
}

constexpr auto kStep = HookPhaseKind::Step;
constexpr auto kFwd = HookPhaseKind::Forward;
constexpr auto kBwd = HookPhaseKind::Backward;
constexpr auto kRec = HookPhaseKind::Recompute;
constexpr auto kOpt = HookPhaseKind::Optimizer;
constexpr auto kZg = HookPhaseKind::ZeroGrad;

std::string show(const HookPhase& p) {
    return std::string(toString(p.kind)) + " " + std::to_string(p.step) + " [" +
           std::to_string(p.start_ns) + ", " + std::to_string(p.end_ns) + "]";
}

std::string show(const std::vector<HookPhase>& phases) {
    std::string out;
    for (const HookPhase& p : phases) out += show(p) + "\n";
    return out;
}

// Compares kind, step and times, printing both lists when they differ.
#define EXPECT_PHASES(actual, ...)                                 \
    do {                                                           \
        const std::vector<HookPhase> expected_ = {__VA_ARGS__};    \
        EXPECT_EQ(show(actual), show(expected_)) << "resolved as"; \
    } while (false)

std::vector<HookPhase> stepsOf(const std::vector<HookPhase>& phases) {
    std::vector<HookPhase> out;
    for (const HookPhase& p : phases)
        if (p.kind == kStep) out.push_back(p);
    return out;
}

// Each step comes before the phases it holds, and everything is by start.
void expectOrdered(const std::vector<HookPhase>& phases) {
    EXPECT_TRUE(std::is_sorted(
        phases.begin(), phases.end(),
        [](const HookPhase& a, const HookPhase& b) { return a.start_ns < b.start_ns; }))
        << show(phases);
    for (size_t i = 0; i < phases.size(); ++i) {
        if (phases[i].kind == kStep || phases[i].step < 0) continue;
        // The step that holds it is earlier in the list.
        bool found = false;
        for (size_t j = 0; j < i; ++j)
            found = found || (phases[j].kind == kStep && phases[j].step == phases[i].step);
        EXPECT_TRUE(found) << show(phases[i]) << " comes before its step in\n" << show(phases);
    }
}

// ------------------------------------------------------------ parseHookLog

TEST(ParseHookLog, ReadsEachRecordType) {
    const HookLog log = parseHookLog(
        R"({"t":"phase","kind":"forward","step":3,"start_ns":100,"end_ns":200,"seq":1})"
        "\n"
        R"({"t":"phase","kind":"step","step":3,"start_ns":90,"end_ns":400,"closed_by":"optimizer","seq":2})"
        "\n"
        R"({"t":"capture","on":true,"time_ns":95,"step":3,"seq":3})"
        "\n"
        R"({"t":"capture","on":false,"time_ns":410,"nvtx":"train","seq":4})"
        "\n"
        R"({"t":"nvtx_range","name":"train","start_ns":96,"end_ns":405,"seq":5})"
        "\n"
        R"({"t":"oom","time_ns":300,"device":1,"bytes":1073741824,"seq":6})"
        "\n");
    EXPECT_EQ(log.damaged_lines, 0u);
    EXPECT_FALSE(log.cut_short);
    ASSERT_EQ(log.phases.size(), 2u);
    EXPECT_EQ(log.phases[0].seq, 1u);
    EXPECT_EQ(show(log.phases[0].phase), show(hp(kFwd, 3, 100, 200)));
    EXPECT_EQ(log.phases[1].seq, 2u);
    EXPECT_EQ(show(log.phases[1].phase), show(hp(kStep, 3, 90, 400)));
    ASSERT_EQ(log.capture.size(), 2u);
    EXPECT_EQ(log.capture[0].time_ns, 95);
    EXPECT_TRUE(log.capture[0].on);
    EXPECT_EQ(log.capture[1].time_ns, 410);
    EXPECT_FALSE(log.capture[1].on);
    ASSERT_EQ(log.nvtx_ranges.size(), 1u);
    EXPECT_EQ(log.nvtx_ranges[0].name, "train");
    EXPECT_EQ(log.nvtx_ranges[0].start_ns, 96);
    EXPECT_EQ(log.nvtx_ranges[0].end_ns, 405);
    ASSERT_EQ(log.ooms.size(), 1u);
    EXPECT_EQ(log.ooms[0].time_ns, 300);
    EXPECT_EQ(log.ooms[0].device, 1);
    EXPECT_EQ(log.ooms[0].bytes, 1073741824);
}

TEST(ParseHookLog, ReadsEveryPhaseKind) {
    const HookLog log = parseHookLog(
        R"({"t":"phase","kind":"step","step":0,"start_ns":1,"end_ns":2,"seq":1}
{"t":"phase","kind":"forward","step":0,"start_ns":1,"end_ns":2,"seq":2}
{"t":"phase","kind":"backward","step":0,"start_ns":1,"end_ns":2,"seq":3}
{"t":"phase","kind":"recompute","step":0,"start_ns":1,"end_ns":2,"seq":4}
{"t":"phase","kind":"optimizer","step":0,"start_ns":1,"end_ns":2,"seq":5}
{"t":"phase","kind":"zero_grad","step":0,"start_ns":1,"end_ns":2,"seq":6}
)");
    EXPECT_EQ(log.damaged_lines, 0u);
    ASSERT_EQ(log.phases.size(), 6u);
    const HookPhaseKind kinds[] = {kStep, kFwd, kBwd, kRec, kOpt, kZg};
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(log.phases[i].phase.kind, kinds[i]) << i;
}

TEST(ParseHookLog, OptionalFieldsTakeTheirDefaults) {
    // A phase without a step number belongs to no step; an OOM without a
    // device or size has device -1 and 0 bytes; zero-length phases are valid.
    const HookLog log = parseHookLog(
        R"({"t":"phase","kind":"forward","start_ns":5,"end_ns":5,"seq":1}
{"t":"phase","kind":"forward","step":-7,"start_ns":5,"end_ns":6,"seq":2}
{"t":"oom","time_ns":9,"seq":3}
{"t":"nvtx_range","start_ns":1,"end_ns":1,"seq":4}
)");
    EXPECT_EQ(log.damaged_lines, 0u);
    ASSERT_EQ(log.phases.size(), 2u);
    EXPECT_EQ(log.phases[0].phase.step, -1);
    EXPECT_EQ(log.phases[0].phase.start_ns, 5);
    EXPECT_EQ(log.phases[0].phase.end_ns, 5);
    EXPECT_EQ(log.phases[1].phase.step, -1);
    ASSERT_EQ(log.ooms.size(), 1u);
    EXPECT_EQ(log.ooms[0].device, -1);
    EXPECT_EQ(log.ooms[0].bytes, 0);
    ASSERT_EQ(log.nvtx_ranges.size(), 1u);
    EXPECT_EQ(log.nvtx_ranges[0].name, "");
}

TEST(ParseHookLog, AnEmptyLogHasNothing) {
    for (const char* text : {"", "\n", "\n\n\n"}) {
        const HookLog log = parseHookLog(text);
        EXPECT_TRUE(log.phases.empty());
        EXPECT_TRUE(log.capture.empty());
        EXPECT_TRUE(log.nvtx_ranges.empty());
        EXPECT_TRUE(log.ooms.empty());
        EXPECT_EQ(log.damaged_lines, 0u);
        EXPECT_FALSE(log.cut_short);
    }
}

TEST(ParseHookLog, ADuplicatedRecordIsReadOnce) {
    // A signal handler wrote lines the main thread then wrote again.
    const HookLog log = parseHookLog(
        R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":1}
{"t":"phase","kind":"backward","step":0,"start_ns":20,"end_ns":30,"seq":2}
{"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":1}
{"t":"phase","kind":"backward","step":0,"start_ns":20,"end_ns":30,"seq":2}
{"t":"phase","kind":"step","step":0,"start_ns":10,"end_ns":40,"seq":3}
)");
    EXPECT_EQ(log.damaged_lines, 0u);
    ASSERT_EQ(log.phases.size(), 3u);
    EXPECT_EQ(log.phases[0].seq, 1u);
    EXPECT_EQ(log.phases[0].phase.kind, kFwd);
    EXPECT_EQ(log.phases[1].seq, 2u);
    EXPECT_EQ(log.phases[1].phase.kind, kBwd);
    EXPECT_EQ(log.phases[2].seq, 3u);
    EXPECT_EQ(log.phases[2].phase.kind, kStep);
}

TEST(ParseHookLog, RecordsAreOrderedBySequenceNumber) {
    // The signal handler's lines (seq 4, 5) went out before the main thread's
    // (seq 2, 3) it interrupted.
    const HookLog log = parseHookLog(
        R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":1}
{"t":"phase","kind":"zero_grad","step":1,"start_ns":50,"end_ns":60,"seq":4}
{"t":"phase","kind":"step","step":1,"start_ns":50,"end_ns":70,"seq":5}
{"t":"phase","kind":"backward","step":0,"start_ns":20,"end_ns":30,"seq":2}
{"t":"phase","kind":"step","step":0,"start_ns":10,"end_ns":40,"seq":3}
)");
    ASSERT_EQ(log.phases.size(), 5u);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(log.phases[i].seq, i + 1) << i;
    EXPECT_EQ(log.phases[1].phase.kind, kBwd);
    EXPECT_EQ(log.phases[3].phase.kind, kZg);
}

TEST(ParseHookLog, ALastLineCutShortIsNotDamage) {
    const std::string whole =
        R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":1})"
        "\n";
    const std::string cut = R"({"t":"phase","kind":"backward","step":0,"start_ns":2)";
    const HookLog log = parseHookLog(whole + cut);
    EXPECT_TRUE(log.cut_short);
    EXPECT_EQ(log.damaged_lines, 0u);
    ASSERT_EQ(log.phases.size(), 1u);
    EXPECT_EQ(log.phases[0].phase.kind, kFwd);

    // Cut anywhere in the line, even after its first byte.
    for (size_t n = 1; n < cut.size(); ++n) {
        const HookLog l = parseHookLog(whole + cut.substr(0, n));
        EXPECT_TRUE(l.cut_short) << n;
        EXPECT_EQ(l.damaged_lines, 0u) << n;
        EXPECT_EQ(l.phases.size(), 1u) << n;
    }
}

TEST(ParseHookLog, AWholeLastLineWithoutItsNewlineIsRead) {
    // Cut right before the newline: the record itself is complete.
    const HookLog log = parseHookLog(
        R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":1})");
    EXPECT_FALSE(log.cut_short);
    EXPECT_EQ(log.damaged_lines, 0u);
    EXPECT_EQ(log.phases.size(), 1u);
}

TEST(ParseHookLog, ADamagedLineInTheMiddleIsCountedAndSkipped) {
    const HookLog log = parseHookLog(
        R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":1}
{"t":"phase","kind":"backward","step":0,"sta
not json at all
{"t":"phase","kind":"step","step":0,"start_ns":10,"end_ns":40,"seq":3}
)");
    EXPECT_EQ(log.damaged_lines, 2u);
    EXPECT_FALSE(log.cut_short);
    ASSERT_EQ(log.phases.size(), 2u);
    EXPECT_EQ(log.phases[0].phase.kind, kFwd);
    EXPECT_EQ(log.phases[1].phase.kind, kStep);
}

TEST(ParseHookLog, RecordTypesOfANewerHookAreIgnoredSilently) {
    const HookLog log = parseHookLog(
        R"({"t":"annotation","time_ns":5,"name":"x","seq":1}
{"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":2}
{"t":"memory_stats","anything":[1,2,3],"seq":3}
)");
    EXPECT_EQ(log.damaged_lines, 0u);
    EXPECT_FALSE(log.cut_short);
    EXPECT_EQ(log.phases.size(), 1u);
    EXPECT_TRUE(log.capture.empty());
    EXPECT_TRUE(log.nvtx_ranges.empty());
    EXPECT_TRUE(log.ooms.empty());
}

TEST(ParseHookLog, LinesThatAreNotRecordsAreDamage) {
    // JSON, but no object with a record type.
    for (const char* line : {R"([1,2,3])", R"("phase")", R"(42)", R"(null)", R"({})",
                             R"({"kind":"forward","start_ns":1,"end_ns":2,"seq":1})",
                             R"({"t":7,"kind":"forward","start_ns":1,"end_ns":2,"seq":1})",
                             R"({"t":"","kind":"forward","start_ns":1,"end_ns":2,"seq":1})"}) {
        const HookLog log = parseHookLog(std::string(line) + "\n");
        EXPECT_EQ(log.damaged_lines, 1u) << line;
        EXPECT_TRUE(log.phases.empty()) << line;
    }
}

TEST(ParseHookLog, PhasesWithBadValuesAreDamage) {
    for (
        const char* line : {
            // negative times
            R"({"t":"phase","kind":"forward","step":0,"start_ns":-10,"end_ns":20,"seq":1})",
            R"({"t":"phase","kind":"forward","step":0,"start_ns":-20,"end_ns":-10,"seq":1})",
            // ends before it starts
            R"({"t":"phase","kind":"forward","step":0,"start_ns":30,"end_ns":20,"seq":1})",
            // no sequence number, or not a valid one
            R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20})",
            R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":0})",
            R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":-3})",
            R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":20,"seq":"1"})",
            // times missing or not integers
            R"({"t":"phase","kind":"forward","step":0,"end_ns":20,"seq":1})",
            R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"seq":1})",
            R"({"t":"phase","kind":"forward","step":0,"start_ns":10.5,"end_ns":20,"seq":1})",
            R"({"t":"phase","kind":"forward","step":0,"start_ns":"10","end_ns":20,"seq":1})",
            R"({"t":"phase","kind":"forward","step":0,"start_ns":10,"end_ns":18446744073709551615,"seq":1})",
            // no kind, or one memscope does not know
            R"({"t":"phase","step":0,"start_ns":10,"end_ns":20,"seq":1})",
            R"({"t":"phase","kind":"validation","step":0,"start_ns":10,"end_ns":20,"seq":1})",
            R"({"t":"phase","kind":"Forward","step":0,"start_ns":10,"end_ns":20,"seq":1})",
        }) {
        const HookLog log = parseHookLog(std::string(line) + "\n");
        EXPECT_EQ(log.damaged_lines, 1u) << line;
        EXPECT_TRUE(log.phases.empty()) << line;
    }
}

TEST(ParseHookLog, OtherRecordsWithBadValuesAreDamage) {
    for (const char* line : {
             R"({"t":"capture","time_ns":10,"seq":1})",
             R"({"t":"capture","on":1,"time_ns":10,"seq":1})",
             R"({"t":"capture","on":true,"seq":1})",
             R"({"t":"capture","on":true,"time_ns":-10,"seq":1})",
             R"({"t":"nvtx_range","name":"a","start_ns":30,"end_ns":20,"seq":1})",
             R"({"t":"nvtx_range","name":"a","end_ns":20,"seq":1})",
             R"({"t":"nvtx_range","name":"a","start_ns":-30,"end_ns":20,"seq":1})",
             R"({"t":"oom","device":0,"bytes":5,"seq":1})",
             R"({"t":"oom","time_ns":-5,"device":0,"bytes":5,"seq":1})",
         }) {
        const HookLog log = parseHookLog(std::string(line) + "\n");
        EXPECT_EQ(log.damaged_lines, 1u) << line;
        EXPECT_TRUE(log.capture.empty()) << line;
        EXPECT_TRUE(log.nvtx_ranges.empty()) << line;
        EXPECT_TRUE(log.ooms.empty()) << line;
    }
}

TEST(ParseHookLog, ReadsTheLogsTheHookWrites) {
    const HookLog gan = parseHookLog(kGanLog);
    EXPECT_EQ(gan.damaged_lines, 0u);
    EXPECT_FALSE(gan.cut_short);
    EXPECT_EQ(gan.phases.size(), 30u);
    const HookLog acc = parseHookLog(kAccumulationLog);
    EXPECT_EQ(acc.damaged_lines, 0u);
    EXPECT_FALSE(acc.cut_short);
    EXPECT_EQ(acc.phases.size(), 29u);
}

// ------------------------------------------------------------- readHookLog

using ReadHookLog = testutil::ScratchDirTest;

TEST_F(ReadHookLog, AMissingFileIsAnEmptyLog) {
    auto log = readHookLog(path("log.jsonl"));
    ASSERT_TRUE(log) << log.message();
    EXPECT_TRUE(log->phases.empty());
    EXPECT_EQ(log->damaged_lines, 0u);
    EXPECT_FALSE(log->cut_short);
}

TEST_F(ReadHookLog, ReadsAFile) {
    const std::string file = write("log.jsonl", std::string(kGanLog) + R"({"t":"phase","kind)");
    auto log = readHookLog(file);
    ASSERT_TRUE(log) << log.message();
    EXPECT_EQ(log->phases.size(), 30u);
    EXPECT_TRUE(log->cut_short);
    EXPECT_EQ(log->damaged_lines, 0u);
}

TEST_F(ReadHookLog, AFolderIsAnError) {
    const std::string folder = path("log.jsonl");
    std::filesystem::create_directory(folder);
    auto log = readHookLog(folder);
    ASSERT_FALSE(log);
    EXPECT_NE(log.message().find(folder), std::string::npos) << log.message();
}

// -------------------------------------------------------- resolveHookPhases

TEST(ResolveHookPhases, NothingLoggedIsNothing) {
    EXPECT_TRUE(resolveHookPhases({}, {}).empty());
}

TEST(ResolveHookPhases, APlainLoopKeepsItsSteps) {
    // loops.py zero_grad_start: zero_grad opens each step, the optimizer closes it.
    const auto out = resolveHookPhases(records({
                                           hp(kZg, 0, 100, 110),
                                           hp(kFwd, 0, 120, 200),
                                           hp(kBwd, 0, 200, 300),
                                           hp(kOpt, 0, 310, 350),
                                           hp(kStep, 0, 100, 350),
                                           hp(kZg, 1, 400, 410),
                                           hp(kFwd, 1, 420, 500),
                                           hp(kBwd, 1, 500, 600),
                                           hp(kOpt, 1, 610, 650),
                                           hp(kStep, 1, 400, 650),
                                       }),
                                       {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 350), hp(kZg, 0, 100, 110), hp(kFwd, 0, 120, 200),
                  hp(kBwd, 0, 200, 300), hp(kOpt, 0, 310, 350), hp(kStep, 1, 400, 650),
                  hp(kZg, 1, 400, 410), hp(kFwd, 1, 420, 500), hp(kBwd, 1, 500, 600),
                  hp(kOpt, 1, 610, 650));
    expectOrdered(out);
}

TEST(ResolveHookPhases, ALaterStepRecordReplacesThoseWithTheSameOrAHigherNumber) {
    const auto out = resolveHookPhases(records({
                                           hp(kStep, 0, 100, 200),
                                           hp(kStep, 1, 200, 300),
                                           hp(kStep, 2, 300, 400),
                                           hp(kStep, 3, 400, 500),
                                           hp(kStep, 1, 200, 450),
                                       }),
                                       {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 200), hp(kStep, 1, 200, 450));
}

TEST(ResolveHookPhases, AJoiningOptimizerExtendsTheStepItJoins) {
    // A GAN: D's optimizer closes step 0, G's phases are logged as step 1's,
    // then G's optimizer joins step 0 and its record replaces the first.
    const auto out = resolveHookPhases(records({
                                           hp(kZg, 0, 100, 110),
                                           hp(kFwd, 0, 110, 150),
                                           hp(kBwd, 0, 150, 190),
                                           hp(kOpt, 0, 190, 200),
                                           hp(kStep, 0, 100, 200),
                                           hp(kZg, 1, 210, 220),
                                           hp(kFwd, 1, 220, 250),
                                           hp(kBwd, 1, 250, 280),
                                           hp(kOpt, 0, 280, 300),
                                           hp(kStep, 0, 100, 300),
                                       }),
                                       {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 300), hp(kZg, 0, 100, 110), hp(kFwd, 0, 110, 150),
                  hp(kBwd, 0, 150, 190), hp(kOpt, 0, 190, 200), hp(kZg, 0, 210, 220),
                  hp(kFwd, 0, 220, 250), hp(kBwd, 0, 250, 280), hp(kOpt, 0, 280, 300));
    expectOrdered(out);
}

TEST(ResolveHookPhases, StepsSplitByForwardsAreMergedIntoTheOptimizersStep) {
    // Accumulation without zero_grad first: each forward after a backward
    // started a step, until the optimizer's step record for step 0 came.
    const auto out = resolveHookPhases(records({
                                           hp(kFwd, 0, 100, 150),
                                           hp(kBwd, 0, 150, 190),
                                           hp(kStep, 0, 100, 200),
                                           hp(kFwd, 1, 200, 250),
                                           hp(kBwd, 1, 250, 290),
                                           hp(kStep, 1, 200, 300),
                                           hp(kFwd, 2, 300, 350),
                                           hp(kBwd, 2, 350, 390),
                                           hp(kOpt, 2, 395, 420),
                                           hp(kStep, 0, 100, 420),
                                       }),
                                       {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 420), hp(kFwd, 0, 100, 150), hp(kBwd, 0, 150, 190),
                  hp(kFwd, 0, 200, 250), hp(kBwd, 0, 250, 290), hp(kFwd, 0, 300, 350),
                  hp(kBwd, 0, 350, 390), hp(kOpt, 0, 395, 420));
    expectOrdered(out);
}

TEST(ResolveHookPhases, AStepRecordWithoutANumberIsIgnored) {
    const auto out =
        resolveHookPhases(records({hp(kStep, 0, 100, 200), hp(kStep, -1, 50, 500)}), {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 200));
}

TEST(ResolveHookPhases, ATailWithABackwardIsOneMoreStep) {
    // Killed mid-step (kill -9): step 1's zero_grad, forward and backward
    // were logged, its step record never was.
    const auto out = resolveHookPhases(records({
                                           hp(kFwd, 0, 100, 150),
                                           hp(kBwd, 0, 150, 190),
                                           hp(kOpt, 0, 190, 200),
                                           hp(kStep, 0, 100, 200),
                                           hp(kZg, 1, 210, 220),
                                           hp(kFwd, 1, 220, 250),
                                           hp(kBwd, 1, 250, 280),
                                       }),
                                       {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 200), hp(kFwd, 0, 100, 150), hp(kBwd, 0, 150, 190),
                  hp(kOpt, 0, 190, 200), hp(kStep, 1, 210, 280), hp(kZg, 1, 210, 220),
                  hp(kFwd, 1, 220, 250), hp(kBwd, 1, 250, 280));
    expectOrdered(out);
}

TEST(ResolveHookPhases, ATailWithAnOptimizerStepOrARecomputeIsOneMoreStep) {
    // Optimizer-in-backward style tails: what holds training makes a step.
    for (HookPhaseKind training : {kOpt, kRec}) {
        const auto out = resolveHookPhases(
            records({hp(kStep, 0, 100, 200), hp(training, 1, 230, 260), hp(kFwd, 1, 270, 300)}),
            {});
        EXPECT_PHASES(out, hp(kStep, 0, 100, 200), hp(kStep, 1, 230, 300),
                      hp(training, 1, 230, 260), hp(kFwd, 1, 270, 300));
    }
}

TEST(ResolveHookPhases, KilledInTheFirstStepIsStepZero) {
    const auto out = resolveHookPhases(
        records({hp(kZg, 0, 100, 110), hp(kFwd, 0, 120, 200), hp(kBwd, 0, 200, 300)}), {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 300), hp(kZg, 0, 100, 110), hp(kFwd, 0, 120, 200),
                  hp(kBwd, 0, 200, 300));
}

TEST(ResolveHookPhases, ATrailingZeroGradBelongsToTheLastStep) {
    // loops.py zero_grad_end: the last zero_grad opened a step the process
    // never ran; the last step is extended over it.
    const auto out = resolveHookPhases(records({
                                           hp(kFwd, 0, 100, 150),
                                           hp(kBwd, 0, 150, 190),
                                           hp(kOpt, 0, 190, 200),
                                           hp(kStep, 0, 100, 200),
                                           hp(kZg, 1, 210, 220),
                                           hp(kFwd, 1, 230, 250),
                                           hp(kBwd, 1, 250, 280),
                                           hp(kOpt, 1, 280, 300),
                                           hp(kStep, 1, 210, 300),
                                           hp(kZg, 2, 310, 320),
                                           hp(kZg, 2, 325, 330),
                                       }),
                                       {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 200), hp(kFwd, 0, 100, 150), hp(kBwd, 0, 150, 190),
                  hp(kOpt, 0, 190, 200), hp(kStep, 1, 210, 330), hp(kZg, 1, 210, 220),
                  hp(kFwd, 1, 230, 250), hp(kBwd, 1, 250, 280), hp(kOpt, 1, 280, 300),
                  hp(kZg, 1, 310, 320), hp(kZg, 1, 325, 330));
    expectOrdered(out);
}

TEST(ResolveHookPhases, AnEvaluationAfterTrainingStaysOutsideEveryStep) {
    // zero_grad, then forwards without a backward: the last step is extended
    // over the zero_grad only; the forwards belong to no step.
    const auto out = resolveHookPhases(records({
                                           hp(kFwd, 0, 100, 150),
                                           hp(kBwd, 0, 150, 190),
                                           hp(kOpt, 0, 190, 200),
                                           hp(kStep, 0, 100, 200),
                                           hp(kZg, 1, 210, 220),
                                           hp(kFwd, 1, 230, 260),
                                           hp(kFwd, 1, 270, 300),
                                       }),
                                       {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 220), hp(kFwd, 0, 100, 150), hp(kBwd, 0, 150, 190),
                  hp(kOpt, 0, 190, 200), hp(kZg, 0, 210, 220), hp(kFwd, -1, 230, 260),
                  hp(kFwd, -1, 270, 300));
    expectOrdered(out);
}

TEST(ResolveHookPhases, AnEvaluationWithoutZeroGradLeavesTheLastStepAsItIs) {
    // loops.py eval_after: the evaluation's forward was open at exit (hook.json).
    const auto out = resolveHookPhases(
        records({hp(kZg, 0, 100, 110), hp(kFwd, 0, 110, 150), hp(kBwd, 0, 150, 190),
                 hp(kOpt, 0, 190, 200), hp(kStep, 0, 100, 200)}),
        {hp(kFwd, 1, 250, 400)});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 200), hp(kZg, 0, 100, 110), hp(kFwd, 0, 110, 150),
                  hp(kBwd, 0, 150, 190), hp(kOpt, 0, 190, 200), hp(kFwd, -1, 250, 400));
}

TEST(ResolveHookPhases, AProcessThatNeverTrainedIsOneStep) {
    // Inference only: forwards, no backward and no optimizer.
    const auto out = resolveHookPhases(
        records({hp(kFwd, 0, 100, 150), hp(kFwd, 0, 160, 200), hp(kFwd, 0, 210, 260)}), {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 260), hp(kFwd, 0, 100, 150), hp(kFwd, 0, 160, 200),
                  hp(kFwd, 0, 210, 260));
    expectOrdered(out);
}

TEST(ResolveHookPhases, OnlyZeroGradsMakeNoStep) {
    // The hook counts a step that never trained only when it ran a forward
    // (phases.py _step_counts): zero_grad calls alone are no iteration.
    const auto out = resolveHookPhases(records({hp(kZg, 0, 100, 110), hp(kZg, 0, 120, 130)}), {});
    EXPECT_PHASES(out, hp(kZg, -1, 100, 110), hp(kZg, -1, 120, 130));
}

TEST(ResolveHookPhases, ThePhasesOpenAtExitComeAfterTheLog) {
    // loops.py no_optimizer, ended by os._exit: the last step was open at
    // exit; hook.json closed it, with the backward the log already has.
    const auto out = resolveHookPhases(records({
                                           hp(kFwd, 0, 100, 150),
                                           hp(kBwd, 0, 150, 190),
                                           hp(kStep, 0, 100, 200),
                                           hp(kFwd, 1, 200, 250),
                                           hp(kBwd, 1, 250, 290),
                                           hp(kStep, 1, 200, 300),
                                           hp(kFwd, 2, 300, 350),
                                           hp(kBwd, 2, 350, 390),
                                       }),
                                       {hp(kStep, 2, 300, 420)});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 200), hp(kFwd, 0, 100, 150), hp(kBwd, 0, 150, 190),
                  hp(kStep, 1, 200, 300), hp(kFwd, 1, 200, 250), hp(kBwd, 1, 250, 290),
                  hp(kStep, 2, 300, 420), hp(kFwd, 2, 300, 350), hp(kBwd, 2, 350, 390));
    expectOrdered(out);
}

TEST(ResolveHookPhases, AnOpenStepAtExitReplacesLoggedStepsFromItsNumber) {
    // The open step's record (step 0, killed by SIGTERM mid-accumulation)
    // replaces steps 0 and 1 that forwards had split; its open backward too.
    const auto out = resolveHookPhases(records({
                                           hp(kFwd, 0, 100, 150),
                                           hp(kBwd, 0, 150, 190),
                                           hp(kStep, 0, 100, 200),
                                           hp(kFwd, 1, 200, 250),
                                           hp(kBwd, 1, 250, 290),
                                           hp(kStep, 1, 200, 300),
                                           hp(kFwd, 2, 300, 350),
                                       }),
                                       {hp(kBwd, 0, 350, 380), hp(kStep, 0, 100, 380)});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 380), hp(kFwd, 0, 100, 150), hp(kBwd, 0, 150, 190),
                  hp(kFwd, 0, 200, 250), hp(kBwd, 0, 250, 290), hp(kFwd, 0, 300, 350),
                  hp(kBwd, 0, 350, 380));
}

TEST(ResolveHookPhases, OpenPhasesWithoutLogMakeTheirOwnStep) {
    // Killed in the first step before any phase closed: only hook.json's
    // open phases.
    const auto out = resolveHookPhases({}, {hp(kFwd, 0, 100, 200), hp(kStep, 0, 90, 200)});
    EXPECT_PHASES(out, hp(kStep, 0, 90, 200), hp(kFwd, 0, 100, 200));
}

TEST(ResolveHookPhases, InnerPhasesTakeTheNumberOfTheStepThatHoldsThem) {
    // Numbers the hook gave (here all wrong) do not matter; a phase outside
    // every step, before training began, gets -1.
    const auto out = resolveHookPhases(records({
                                           hp(kFwd, 5, 10, 20),
                                           hp(kFwd, 7, 100, 150),
                                           hp(kRec, 9, 160, 170),
                                           hp(kBwd, 7, 150, 190),
                                           hp(kStep, 0, 100, 200),
                                           hp(kOpt, 3, 300, 350),
                                           hp(kStep, 1, 300, 350),
                                       }),
                                       {});
    EXPECT_PHASES(out, hp(kFwd, -1, 10, 20), hp(kStep, 0, 100, 200), hp(kFwd, 0, 100, 150),
                  hp(kBwd, 0, 150, 190), hp(kRec, 0, 160, 170), hp(kStep, 1, 300, 350),
                  hp(kOpt, 1, 300, 350));
    expectOrdered(out);
}

TEST(ResolveHookPhases, AStepComesBeforeThePhasesItHoldsEvenInTheLogsOrder) {
    // Same start and end: the step first, whatever order the records came in.
    const auto out =
        resolveHookPhases(records({hp(kOpt, 0, 100, 200), hp(kStep, 0, 100, 200)}), {});
    EXPECT_PHASES(out, hp(kStep, 0, 100, 200), hp(kOpt, 0, 100, 200));
}

TEST(ResolveHookPhases, TheGanLogTheHookWrote) {
    const auto out = resolveHookPhases(parseHookLog(kGanLog).phases, {});
    // Three steps, each D's and G's iteration together.
    EXPECT_PHASES(stepsOf(out), hp(kStep, 0, 1796189332352738233, 1796189332362968957),
                  hp(kStep, 1, 1796189332363032890, 1796189332363831551),
                  hp(kStep, 2, 1796189332363864361, 1796189332364654075));
    ASSERT_EQ(out.size(), 3u + 24u);
    // Each holds two zero_grads, forwards, backwards and optimizer steps.
    for (int32_t s = 0; s < 3; ++s) {
        for (HookPhaseKind k : {kZg, kFwd, kBwd, kOpt})
            EXPECT_EQ(std::count_if(out.begin(), out.end(),
                                    [&](const HookPhase& p) { return p.kind == k && p.step == s; }),
                      2)
                << "step " << s << " " << toString(k);
    }
    // G's phases in step 0, logged as step 1's, are step 0's now.
    EXPECT_EQ(show(out[5]), show(hp(kZg, 0, 1796189332362296329, 1796189332362347061)));
    EXPECT_EQ(show(out[8]), show(hp(kOpt, 0, 1796189332362741167, 1796189332362968957)));
    expectOrdered(out);
}

TEST(ResolveHookPhases, TheAccumulationLogTheHookWrote) {
    const auto out = resolveHookPhases(parseHookLog(kAccumulationLog).phases, {});
    // Steps 0-2 of the first iteration are one step; the trailing zero_grad
    // extends the last step.
    EXPECT_PHASES(stepsOf(out), hp(kStep, 0, 1796189333537206544, 1796189333540130038),
                  hp(kStep, 1, 1796189333540176619, 1796189333540704326),
                  hp(kStep, 2, 1796189333540755624, 1796189333541405369));
    ASSERT_EQ(out.size(), 3u + 24u);
    for (int32_t s = 0; s < 3; ++s) {
        EXPECT_EQ(std::count_if(out.begin(), out.end(),
                                [&](const HookPhase& p) { return p.kind == kFwd && p.step == s; }),
                  3)
            << s;
        EXPECT_EQ(std::count_if(out.begin(), out.end(),
                                [&](const HookPhase& p) { return p.kind == kBwd && p.step == s; }),
                  3)
            << s;
        EXPECT_EQ(std::count_if(out.begin(), out.end(),
                                [&](const HookPhase& p) { return p.kind == kOpt && p.step == s; }),
                  1)
            << s;
    }
    // The zero_grad each iteration ends with opens the next step; the last
    // one is the last step's.
    EXPECT_EQ(show(out.back()), show(hp(kZg, 2, 1796189333541376446, 1796189333541405369)));
    EXPECT_TRUE(
        std::none_of(out.begin(), out.end(), [](const HookPhase& p) { return p.step < 0; }));
    expectOrdered(out);
}

}  // namespace
}  // namespace memscope
