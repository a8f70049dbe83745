#pragma once
// NVTX ranges and marks as trace phases and annotations. The NVTX side (the
// injection entry point and its function table) is in nvtx_injection.cpp;
// this is what a range push, pop, start, end or mark does to the trace.
//
// Only the default domain makes phases: that is where a training script's
// own ranges ("step 3", "forward") are. Libraries put theirs in a domain of
// their own (NCCL, Transformer Engine, cuDNN): as phases they would take the
// allocations over ("AllReduce" instead of "backward"), so they become
// annotations instead, Start and End, named "<domain>: <message>".

#include <cstdint>
#include <string_view>

namespace memscope::cupti::nvtx {

// Return NVTX's values: push/pop the nesting level (-1 when not recorded);
// start a range id (0 when not recorded).
int push(std::string_view name);
int pop();
uint64_t start(std::string_view name);
// Ends a range of either kind: the ids of domain ranges are told apart.
void end(uint64_t range_id);
void mark(std::string_view name);

// A named domain's ranges and marks: annotations. `domain` is the domain's
// name, which lives as long as the process (nvtx_injection.cpp keeps it).
int domainPush(const char* domain, std::string_view message);
int domainPop(const char* domain);
uint64_t domainStart(const char* domain, std::string_view message);
void domainMark(const char* domain, std::string_view message);

}  // namespace memscope::cupti::nvtx
