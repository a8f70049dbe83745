#pragma once
// Stack frames as people read them. One rule, used by the GUI's hover and
// inspector, the CLI's peak tables and the search, decides each frame's role:
//
// - noise: the machinery between the user's code and the allocator, which
//   tells nothing about why memory was taken: the unwinder, the caching
//   allocator and empty_* factories, the dispatcher, the autograd engine's
//   threads, CPython's C API and call machinery, process start-up, and
//   torch/nn/modules/module.py's call wrappers;
// - library: torch's and other installed packages' Python code, generated
//   code (Inductor), and C/C++ frames that are not noise;
// - user: Python code outside installed packages, the user's own model.
//
// An allocation's label is its first user frame (innermost first), else its
// first library frame.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope {

enum class FrameRole : uint8_t { Noise = 0, Library = 1, User = 2 };

FrameRole frameRole(const Trace& trace, FrameId id);
inline bool isNoiseFrame(const Trace& trace, FrameId id) {
    return frameRole(trace, id) == FrameRole::Noise;
}

// "name (file:line)", "??" for a frame without a name, "?" for a bad id.
std::string frameText(const Trace& trace, FrameId id);

// Up to `max` frames of a stack, noise left out, innermost first.
std::vector<FrameId> visibleFrames(const Trace& trace, StackId stack, size_t max);

// Roles memoized by a frame's (function, file) strings, for callers that
// classify many stacks: frames that share strings are classified once.
class FrameRoleCache {
public:
    explicit FrameRoleCache(const Trace& trace) : trace_(trace) {}
    FrameRole role(FrameId id);

private:
    const Trace& trace_;
    std::unordered_map<uint64_t, FrameRole> by_strings_;
};

// The frame that names an allocation site: the first user frame, else the
// first library frame; nullopt for a stack of noise or no stack.
std::optional<FrameId> siteFrame(const Trace& trace, StackId stack);
std::optional<FrameId> siteFrame(const Trace& trace, StackId stack, FrameRoleCache& cache);

// frameText of the site frame, "" without one.
std::string siteLabel(const Trace& trace, StackId stack);

// Roles of every frame of a trace, computed once (index = FrameId value; 0
// unused) for callers that classify many stacks.
std::vector<FrameRole> frameRoles(const Trace& trace);

}  // namespace memscope
