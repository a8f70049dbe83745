#pragma once
// Reserving a growing vector for what the whole input will need, projected
// from the part read so far. A vector that doubles touches twice its final
// size in fresh pages and copies itself a dozen times; at 1 GB of pickle the
// memo and the events are hundreds of MB, and those first-touch page faults
// were a quarter of the import. Reserved pages never written cost nothing, so
// an overestimate is cheap; an underestimate falls back to doubling. A
// warmer, where given, faults in the projected part on another core while
// the writer fills it (page_warmer.h): it is stopped before the vector moves.

#include <algorithm>
#include <cstdint>

#include "memscope/base/page_warmer.h"

namespace memscope::pickle {

// `reached` of `total` input bytes produced v.size() elements so far. Only
// grows, with a quarter of slack so that small changes in the rate do not
// make it copy again, and never past `cap` elements.
// The warmer covers the projection, not the slack, which a close projection
// leaves untouched and out of the resident memory.
template <class Vector>
void reserveProjected(Vector& v, uint64_t reached, uint64_t total, uint64_t cap,
                      PageWarmer* warmer = nullptr) {
    if (reached == 0 || v.empty() || total <= reached) return;
    const double projected = double(v.size()) * double(total) / double(reached);
    if (projected <= double(v.capacity())) return;
    const double wanted = std::min(projected * 1.25, double(cap));
    if (wanted <= double(v.capacity())) return;
    if (warmer) warmer->stop();
    v.reserve(size_t(wanted));
    if (warmer) warmer->warm({PageWarmer::unfilled(v, size_t(std::min(projected, double(cap))))});
}

}  // namespace memscope::pickle
