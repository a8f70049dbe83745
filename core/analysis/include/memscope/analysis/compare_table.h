#pragma once
// The compare table: one row per run, the baseline's figures and everyone's
// difference to it, over the whole run or one training phase, with the peak's
// position on the aligned axis. The GUI's table displays it and
// `memscope-cli compare` prints it (text, CSV or JSON): one source of numbers.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memscope/analysis/alignment.h"
#include "memscope/analysis/compare.h"
#include "memscope/analysis/module_breakdown.h"

namespace memscope {

struct CompareInput {
    std::string path;
    std::string name;
    RunRef run;
};

struct CompareRow {
    std::string path;
    std::string name;
    RunSummary summary;
    std::optional<WindowPeak> peak;  // in the table's scope; absent: the run lacks that phase
    SummaryDelta delta;              // against the baseline row
    double peak_x = 0;               // the peak on the aligned axis
    std::string peak_phase;          // "step 1 / backward / block 3" at the peak in scope
    Alignment alignment;
    RunRef run;  // the trace and device compared
    TimeBase time_base = TimeBase::Nanoseconds;
    // Which layers hold the peak in scope, and their change against the
    // baseline's (matched by module path; empty when either has no modules).
    ModuleBreakdown modules;
    std::vector<ModuleDelta> module_deltas;
};

enum class CompareColumnKind : uint8_t {
    Run,
    Peak,
    PeakDelta,
    PeakAt,
    PeakPhase,
    ReservedPeak,
    StepTime,
    StepTimeRatio,
    RecomputeOverhead,
    CategoryAtPeak,
};

struct CompareColumn {
    CompareColumnKind kind = CompareColumnKind::Run;
    Category category = Category::Unknown;  // for CategoryAtPeak
    friend bool operator==(const CompareColumn&, const CompareColumn&) = default;
};

struct CompareTable {
    size_t baseline = 0;
    AlignMode align = AlignMode::Time;
    PeakScope scope;
    std::string axis_unit;  // "s", "events", "step"
    std::vector<CompareRow> rows;
    // Categories with bytes at some run's peak, in torch.profiler's order: a
    // table never shows a column of zeros.
    std::vector<Category> categories;

    std::vector<CompareColumn> columns() const;
    std::string header(CompareColumn column) const;
    // What a person reads ("1.50 GiB", "+12.0 MiB (+3.1%)", "—" for the baseline's delta).
    std::string cell(size_t row, CompareColumn column) const;
    // The plain number or text a CSV holds ("" when unknown).
    std::string raw(size_t row, CompareColumn column) const;
    // Why a row's peak changed against the baseline's, or did not, from its
    // recorded policy and where the baseline's peak lies in the table's scope
    // (policy_explainer.h); none for the baseline, a row without a peak in
    // scope, or a policy that is not known.
    std::optional<std::string> why(size_t row) const;
};

// The full-save policy's run when there is one (recorded policy "full", or a
// name ending in "full"), else the first; never a predicted run (its trace's
// Trace::prediction) while any run was measured.
size_t defaultBaseline(std::span<const CompareInput> runs);

CompareTable buildCompareTable(std::span<const CompareInput> runs, size_t baseline, AlignMode align,
                               PeakScope scope = {});

std::string_view toString(AlignMode mode);  // "time", "step", "phase"
std::optional<AlignMode> alignModeFromString(std::string_view name);

}  // namespace memscope
