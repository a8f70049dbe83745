#pragma once
// NVTX ranges and marks as trace phases and annotations. The NVTX side (the
// injection entry point and its function table) is in nvtx_injection.cpp;
// this is what a range push, pop, start, end or mark does to the trace.

#include <cstdint>
#include <string_view>

namespace memscope::cupti::nvtx {

// Return NVTX's values: push/pop the nesting level (-1 when not recorded);
// start a range id (0 when not recorded).
int push(std::string_view name);
int pop();
uint64_t start(std::string_view name);
void end(uint64_t range_id);
void mark(std::string_view name);

}  // namespace memscope::cupti::nvtx
