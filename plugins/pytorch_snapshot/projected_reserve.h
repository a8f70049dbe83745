#pragma once
// Reserving a growing vector for what the whole input will need, projected
// from the part read so far. A vector that doubles touches twice its final
// size in fresh pages and copies itself a dozen times; at 1 GB of pickle the
// memo and the events are hundreds of MB, and those first-touch page faults
// were a quarter of the import. Reserved pages never written cost nothing, so
// an overestimate is cheap; an underestimate falls back to doubling.

#include <algorithm>
#include <cstdint>

namespace memscope::pickle {

// `reached` of `total` input bytes produced v.size() elements so far. Only
// grows, with a quarter of slack so that small changes in the rate do not
// make it copy again, and never past `cap` elements.
template <class Vector>
void reserveProjected(Vector& v, uint64_t reached, uint64_t total, uint64_t cap) {
    if (reached == 0 || v.empty() || total <= reached) return;
    const double projected = double(v.size()) * double(total) / double(reached);
    if (projected <= double(v.capacity())) return;
    const double wanted = std::min(projected * 1.25, double(cap));
    if (wanted > double(v.capacity())) v.reserve(size_t(wanted));
}

}  // namespace memscope::pickle
