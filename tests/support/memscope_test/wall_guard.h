#pragma once
// A wall-clock bound for tests that guard against a hang or a quadratic
// blow-up on hostile input (never a speed check: benchmarks print those).
// The bound is set for the release build; the sanitizer build (AddressSanitizer
// with UBSan, the asan preset) runs the same code several times slower, and a
// loaded CI runner slower still, so the bound is widened there rather than
// made tight enough to flake.
#include <chrono>

namespace memscope::test {

// g++ says __SANITIZE_ADDRESS__; clang says __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr int kWallGuardFactor = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr int kWallGuardFactor = 4;
#else
inline constexpr int kWallGuardFactor = 1;
#endif
#else
inline constexpr int kWallGuardFactor = 1;
#endif

// The most a guarded step may take in this build: `release_bound` times the
// sanitizer build's slowdown.
inline std::chrono::seconds wallGuard(std::chrono::seconds release_bound) {
    return release_bound * kWallGuardFactor;
}

}  // namespace memscope::test
