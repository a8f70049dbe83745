"""Writes small seed inputs for the fuzzers (the real fixtures are seeds too,
see scripts/fuzz.sh). usage: make_seeds.py OUTDIR"""
import gzip
import json
import os
import pickle
import sys

out = sys.argv[1]
for d in ("snapshot", "kineto", "memory_timeline"):
    os.makedirs(os.path.join(out, d), exist_ok=True)

frames = [{"filename": "train.py", "line": 10 + i, "name": f"f{i}"} for i in range(4)]
entries = [
    {"action": "segment_alloc", "addr": 1 << 40, "size": 2 << 20, "stream": 0, "time_us": 1, "frames": frames},
    {"action": "alloc", "addr": 1 << 40, "size": 512, "stream": 0, "time_us": 2, "frames": frames[:2],
     "compile_context": "N/A", "user_metadata": ""},
    {"action": "free_requested", "addr": 1 << 40, "size": 512, "stream": 0, "time_us": 3, "frames": frames},
    {"action": "free_completed", "addr": 1 << 40, "size": 512, "stream": 0, "time_us": 4, "frames": frames},
    {"action": "oom", "device_free": 1024, "size": 1 << 30, "stream": 0, "time_us": 5, "frames": []},
    {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 6},
    {"action": "annotate", "addr": 0, "size": 0, "stream": 0, "time_us": 7, "user_metadata": "x"},
]
snap = {
    "segments": [{"device": 0, "address": 1 << 40, "total_size": 2 << 20, "allocated_size": 0,
                  "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
                  "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                  "blocks": [{"address": 1 << 40, "size": 2 << 20, "requested_size": 0,
                              "state": "inactive", "frames": []}]}],
    "device_traces": [entries, []],
    "allocator_settings": {"max_split_size": -1, "garbage_collection_threshold": 0.0,
                           "roundup_power2_divisions": {"1": 0}},
    "external_annotations": [{"stage": "START", "name": "step", "device": 0, "time_us": 2}],
}
for proto in (2, 3, 4, 5):
    with open(os.path.join(out, "snapshot", f"small_p{proto}.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=proto)
legacy = [{"device": 0, "address": 4096, "total_size": 1024, "stream": 0, "segment_type": "small",
           "blocks": [{"size": 512, "state": "active_allocated",
                       "history": [{"addr": 4096, "real_size": 500, "frames": frames}]},
                      {"size": 512, "state": "inactive", "history": []}]}]
with open(os.path.join(out, "snapshot", "legacy_list.pickle"), "wb") as f:
    pickle.dump(legacy, f, protocol=2)

mem = lambda ts, dev, addr, b: {"ph": "i", "name": "[memory]", "ts": ts, "pid": 1,
                                "args": {"Device Type": 1, "Device Id": dev, "Addr": addr, "Bytes": b,
                                         "Total Allocated": 0, "Total Reserved": 4096}}
trace = {"schemaVersion": 1, "distributedInfo": {"rank": 0},
         "traceEvents": [mem(1.5, 0, 4096, 512), {"ph": "X", "name": "aten::mm", "ts": 2, "dur": 1},
                         mem(3, 0, 4096, -512)]}
with open(os.path.join(out, "kineto", "small.json"), "w") as f:
    json.dump(trace, f)
with gzip.open(os.path.join(out, "kineto", "small.json.gz"), "wt") as f:
    json.dump(trace, f)
with open(os.path.join(out, "kineto", "old.json"), "w") as f:
    json.dump([{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Device Type": 0, "Device Id": -1, "Bytes": 8}}], f)

with open(os.path.join(out, "memory_timeline", "raw.json"), "w") as f:
    json.dump([[-1, 1, 100, 0], [10, 2, 20, 4], [11, 3, -20, 4], [11, 3, 20, 5], [12, 4, -20, 5]], f)
with gzip.open(os.path.join(out, "memory_timeline", "raw.json.gz"), "wt") as f:
    json.dump([[-1, 1, 100, 0], [10, 2, 20, 4]], f)
with open(os.path.join(out, "memory_timeline", "coalesced.json"), "w") as f:
    json.dump([[1, 2], [[0, 100, 0, 0, 0, 5, 0, 0, 0], [0, 100, 0, 0, 0, 0, 0, 0, 0]]], f)
