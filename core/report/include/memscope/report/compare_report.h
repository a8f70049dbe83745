#pragma once
// The compare table (memscope/analysis/compare_table.h) as `memscope-cli
// compare` prints it: CSV, aligned text for a terminal, and JSON
// (docs/JSON_REFERENCE.md).

#include <string>

#include "memscope/analysis/compare_table.h"

namespace memscope {

std::string toCsv(const CompareTable& table);   // raw numbers, one header line
std::string toText(const CompareTable& table);  // aligned columns, for a terminal
std::string toJson(const CompareTable& table);

}  // namespace memscope
