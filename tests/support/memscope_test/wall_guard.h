#pragma once
// A wall-clock bound for tests that guard against a hang or a quadratic
// blow-up on hostile input (never a speed check: benchmarks print those).
// The bound is set for the release build; AddressSanitizer and UBSan run the
// same code several times slower, and a loaded CI runner slower still, so the
// bound is widened there rather than made tight enough to flake.
#include <chrono>

namespace memscope::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
inline constexpr int kWallGuardFactor = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
inline constexpr int kWallGuardFactor = 4;
#else
inline constexpr int kWallGuardFactor = 1;
#endif
#else
inline constexpr int kWallGuardFactor = 1;
#endif

// The most a guarded step may take in this build: `release_bound` times the
// sanitizers' slowdown.
inline std::chrono::seconds wallGuard(std::chrono::seconds release_bound) {
    return release_bound * kWallGuardFactor;
}

}  // namespace memscope::test
