#pragma once
// The phase strip under a timeline, as data: steps, forward/backward/optimizer,
// blocks and recomputation, and annotations, one row each, built once per
// device of a run (on the loader thread: a 10 M event trace has 180,000
// phases). The GUI paints it (app/gui/run_view/phase_bands.h), choosing a
// colour for each item's shade.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/view/first_reaching.h"

namespace memscope {

// What an item is drawn as: its kind, and for steps and blocks which of two
// alternating shades, so that neighbours stay apart.
enum class PhaseBandShade : uint8_t {
    StepEven,
    StepOdd,
    Forward,
    Backward,
    Optimizer,
    BlockEven,
    BlockOdd,
    Recompute,
    Range,  // a recorded range or annotation
};

// Small and trivially copyable: a frame visits a few per pixel column.
struct PhaseBandItem {
    int64_t start = 0;
    int64_t end = 0;    // == start for instant annotations
    uint32_t name = 0;  // index into PhaseBandData::names
    PhaseBandShade shade = PhaseBandShade::Range;
    bool inferred = false;  // a phase memscope inferred: drawn paler, named so
    uint8_t row = 0;
};

struct PhaseBandData {
    static constexpr int kRows = 4;  // step, pass, block/recompute, ranges+annotations
    // Each distinct label once; an inferred phase's ends in " (inferred)".
    std::vector<std::string> names;
    // Per row: its items by start, side by side in memory (a frame visits a
    // few per pixel column, and scattered they were a cache miss each), and a
    // search over their ends, so painting and hovering start at the first
    // item that can reach the view, and painting steps over the items hidden
    // under pixels already painted, instead of walking every phase.
    std::array<std::vector<PhaseBandItem>, kRows> rows;
    std::array<FirstReaching, kRows> row_reach;
    size_t itemCount() const;
    bool empty() const { return itemCount() == 0; }
    const std::string& nameOf(const PhaseBandItem& item) const { return names[item.name]; }
    // The first position in rows[row] whose item ends at or after x.
    size_t firstReaching(int row, int64_t x) const { return nextReaching(row, 0, x); }
    // The same, from position `from` on.
    size_t nextReaching(int row, size_t from, int64_t x) const {
        return row_reach[size_t(row)].find(from, x);
    }
};

// The strip of `device` (phases and annotations of every device, -1, too).
PhaseBandData buildPhaseBands(const Trace& trace, int16_t device);

// The names of the phases under x (innermost row last), for hover text.
std::vector<std::string> phaseNamesAt(const PhaseBandData& data, int64_t x);

}  // namespace memscope
