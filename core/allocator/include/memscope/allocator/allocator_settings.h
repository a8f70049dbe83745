#pragma once
// The caching allocator's settings, as PyTorch reads them from
// PYTORCH_CUDA_ALLOC_CONF ("expandable_segments:True,max_split_size_mb:512")
// and records them in a snapshot's `allocator_settings`. What the allocator
// model (caching_allocator.h) replays a run under: the recorded settings, else
// PyTorch's defaults, with what the user overrides on top.

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"

namespace memscope {

// roundup_power2_divisions holds one count per size interval: sizes up to
// 1 MiB, then [2^k MiB, 2^(k+1) MiB) for k = 0.., the last open-ended; 0 or 1
// = round to 512 B only (PyTorch's kRoundUpPowerOfTwoIntervals).
inline constexpr size_t kRoundupIntervals = 16;

struct AllocatorSettings {
    static constexpr uint64_t kNoMaxSplit = std::numeric_limits<uint64_t>::max();
    // Blocks of this size or more are never split (max_split_size_mb).
    uint64_t max_split_size = kNoMaxSplit;
    std::array<uint32_t, kRoundupIntervals> roundup_power2_divisions{};
    // Fraction of the device's memory above which cached blocks are freed
    // oldest first before a new segment is made; 0 = off. PyTorch applies it
    // only under a memory cap, so the model does only with a device capacity.
    double garbage_collection_threshold = 0;
    bool expandable_segments = false;

    friend bool operator==(const AllocatorSettings&, const AllocatorSettings&) = default;
};

// Where the settings came from, for the report to say.
enum class AllocatorSettingsSource : uint8_t {
    Recorded = 0,  // the trace's allocator_settings
    Defaults = 1,  // none recorded: PyTorch's defaults
};

struct ResolvedAllocatorSettings {
    AllocatorSettings settings;
    AllocatorSettingsSource source = AllocatorSettingsSource::Defaults;
};

// The trace's recorded settings (properties "allocator_settings.*" as the
// snapshot importer keeps them), else the defaults. Unreadable values are
// left at their default: a hostile file cannot make the model misbehave.
ResolvedAllocatorSettings allocatorSettingsOf(const Trace& trace);

// `base` with PYTORCH_CUDA_ALLOC_CONF's text applied on top, in its own
// syntax: "key:value" pairs separated by commas. Keys: expandable_segments
// (True/False), max_split_size_mb (MiB, > 20), roundup_power2_divisions (N, or
// [256:1,512:2,>:4] by interval in MiB), garbage_collection_threshold (0 < F <
// 1). Keys PyTorch knows that do not change where blocks go (pinned memory,
// release_lock_on_cudamalloc, backend) are accepted and ignored; an unknown
// key or a bad value is an error naming it.
Result<AllocatorSettings> applyAllocatorConf(AllocatorSettings base, std::string_view conf);

// The settings in PYTORCH_CUDA_ALLOC_CONF's syntax, only those that differ from
// the defaults ("" for the defaults).
std::string toAllocatorConf(const AllocatorSettings& settings);
// The same, "defaults" for the defaults: what a report prints.
std::string describeAllocatorSettings(const AllocatorSettings& settings);

// Size rounding as the allocator does it (round_size): 512 B at least, 512-B
// multiples, or the next power-of-two division where the interval asks for one.
uint64_t roundAllocationSize(const AllocatorSettings& settings, uint64_t size);

}  // namespace memscope
