#include "allocator_json.h"

namespace memscope::json {

void allocatorModel(Out& w, const AllocatorModelRun& run, bool recorded) {
    w.StartObject();
    field(w, "settings", std::string_view(toAllocatorConf(run.settings)));
    field(
        w, "settings_source",
        std::string_view(run.settings_overridden                                    ? "asked for"
                         : run.settings_source == AllocatorSettingsSource::Recorded ? "recorded"
                                                                                    : "defaults"));
    field(w, "predicted", std::string_view("by the caching-allocator model, not recorded"));
    key(w, "warm_start");
    w.Bool(run.warm_start);
    field(w, "start_reserved_bytes", run.start_reserved_bytes);
    field(w, "reserved_peak_bytes", run.reserved_peak_bytes);
    field(w, "segment_allocs", run.segment_allocs);
    field(w, "segment_frees", run.segment_frees);
    field(w, "segment_maps", run.segment_maps);
    field(w, "segment_unmaps", run.segment_unmaps);
    field(w, "largest_free_block_at_peak_bytes", run.largest_free_block_at_peak_bytes);
    field(w, "fragmentation_at_peak_bytes", run.fragmentationAtPeak());
    field(w, "device_memory_bytes", run.device_capacity);
    key(w, "first_failure");
    if (run.failure) {
        w.StartObject();
        field(w, "event_index", run.failure->event_index);
        field(w, "requested_bytes", run.failure->requested_bytes);
        field(w, "reserved_bytes", run.failure->reserved_bytes);
        field(w, "largest_free_block_bytes", run.failure->largest_free_block);
        w.EndObject();
    } else {
        w.Null();
    }
    if (recorded) {
        key(w, "recorded");
        w.StartObject();
        key(w, "has_segment_events");
        w.Bool(run.recorded.has_segment_events);
        field(w, "reserved_peak_bytes", run.recorded.reserved_peak_bytes);
        field(w, "segment_allocs", run.recorded.segment_allocs);
        field(w, "segment_maps", run.recorded.segment_maps);
        w.EndObject();
        field(w, "reserved_peak_difference_percent",
              relativeDifference(run.reserved_peak_bytes, run.recorded.reserved_peak_bytes));
        const bool maps = run.settings.expandable_segments;
        field(w, "segment_count_difference_percent",
              relativeDifference(maps ? run.segment_maps : run.segment_allocs,
                                 maps ? run.recorded.segment_maps : run.recorded.segment_allocs));
    }
    w.EndObject();
}

}  // namespace memscope::json
