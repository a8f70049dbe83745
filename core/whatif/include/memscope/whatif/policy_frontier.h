#pragma once
// The memory-versus-time trade-off between training runs of the same model
// under different checkpointing policies: which runs lie on the frontier (no
// other run is both at most as large and at most as slow, and better in one),
// and the fastest run that fits a memory budget. Torch-free and GUI-free, so
// the trainer, the CLI and the GUI answer the same way.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memscope {

struct PolicyPoint {
    std::string name;        // the policy, e.g. "block+opt-in-bwd"
    int64_t peak_bytes = 0;  // measured peak of the run
    double step_ms = 0;      // measured step time
};

// True if `b` dominates `a`: no larger and no slower, and strictly better in
// at least one of the two. Equal points do not dominate each other.
bool dominates(const PolicyPoint& b, const PolicyPoint& a);

// One flag per point, in order: true when no other point dominates it.
std::vector<bool> onFrontier(std::span<const PolicyPoint> points);

struct BudgetAnswer {
    int64_t budget_bytes = 0;
    // The fastest point whose peak fits (ties: the smaller peak, then the
    // first); nullopt when none fits or there are no points.
    std::optional<size_t> choice;
    // 0 when one fits; else how far the smallest peak is over the budget
    // (0 as well when there are no points).
    int64_t short_by_bytes = 0;
    // When none fits: the point with the smallest peak (ties: the faster).
    std::optional<size_t> closest;
};

BudgetAnswer fitBudget(std::span<const PolicyPoint> points, int64_t budget_bytes);

// One line for a person: "budget 2.50 GiB: block+opt-in-bwd fits (peak 2.31 GiB,
// 41.2 ms per step)" or "budget 1.00 GiB: no policy fits; the smallest peak,
// sqrt's 1.20 GiB, is 204 MiB over".
std::string describeBudget(std::span<const PolicyPoint> points, const BudgetAnswer& answer);

}  // namespace memscope
