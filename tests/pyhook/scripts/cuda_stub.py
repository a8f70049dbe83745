"""Test scaffolding (not a user script): stands in for the CUDA allocator so
the hook's history code runs on a CPU-only machine.

usage: cuda_stub.py API STEPS LOG [--forever]
  API: "1.13" (boolean _record_memory_history), "2.1" (string form, no
  clear_history) or "2.5" (string form with clear_history, compile_context,
  global_record_annotations). LOG receives the calls made to the fake as JSON.

The hook queues its switch-on with torch.cuda._lazy_call at torch import; this
script then swaps in the fake memory layer and runs the queued calls as CUDA's
lazy initialization would. Each training step adds 200 allocations and 200
frees to the fake counters (about 600 trace entries).

The 2.1 and 2.5 stand-ins also have torch._C._cuda_attach_out_of_memory_observer.
Test switches (environment):
  MEMSCOPE_TEST_OOM_AT=K        at step K the observers see an OOM, then the
                                process dies without exiting (os._exit(3));
  MEMSCOPE_TEST_SLOW_SNAPSHOT=S _snapshot takes S seconds;
  MEMSCOPE_TEST_NVTX=NAME:A:B   steps A..B run inside torch.cuda.nvtx.range(NAME)
                                (a stand-in NVTX library records the calls).
"""
import json
import os
import sys
import time

import torch
import torch.nn as nn

API, STEPS, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3]
FOREVER = "--forever" in sys.argv
calls = []
observers = []  # OOM observers the hook attached (2.1+ stand-ins)
counters = {"allocation.all.allocated": 0, "allocation.all.freed": 0,
            "segment.all.allocated": 0, "segment.all.freed": 0}


def save_log():
    with open(LOG, "w") as f:
        json.dump(calls, f)


if API == "1.13":
    def _record_memory_history(enabled, record_context=True, trace_alloc_max_entries=1,
                               trace_alloc_record_context=False, device=None,
                               record_context_cpp=False):
        calls.append({"enabled": enabled, "trace_alloc_max_entries": trace_alloc_max_entries,
                      "trace_alloc_record_context": trace_alloc_record_context})
        save_log()
    impl = None
else:
    def impl(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None,
             **extra):
        calls.append(dict(enabled=enabled, context=context, stacks=stacks,
                          max_entries=max_entries, **extra))
        save_log()
    if API == "2.5":
        def _record_memory_history_impl(enabled="all", context="all", stacks="all",
                                        max_entries=sys.maxsize, device=None,
                                        clear_history=False, compile_context=False,
                                        global_record_annotations=False):
            impl(enabled, context, stacks, max_entries, device, clear_history=clear_history,
                 compile_context=compile_context,
                 global_record_annotations=global_record_annotations)
    else:
        def _record_memory_history_impl(enabled="all", context="all", stacks="all",
                                        max_entries=sys.maxsize, device=None):
            impl(enabled, context, stacks, max_entries, device)

    def _record_memory_history(enabled="all", *args, **kwargs):
        assert not isinstance(enabled, bool), "the hook used the legacy form on a 2.1+ API"
        return _record_memory_history_impl(enabled, *args, **kwargs)

    torch.cuda.memory._record_memory_history_impl = _record_memory_history_impl

    torch._C._cuda_attach_out_of_memory_observer = observers.append

snapshots = [0]
SLOW = float(os.environ.get("MEMSCOPE_TEST_SLOW_SNAPSHOT", "0"))
OOM_AT = int(os.environ.get("MEMSCOPE_TEST_OOM_AT", "-1"))
NVTX = os.environ.get("MEMSCOPE_TEST_NVTX", "")


def _snapshot(device=None):
    if SLOW:
        time.sleep(SLOW)
    snapshots[0] += 1
    return {"segments": [], "device_traces": [[{"action": "alloc", "addr": snapshots[0],
                                                "size": 512, "stream": 0}]],
            "counters": dict(counters)}


def memory_stats(device=None):
    return dict(counters)


torch.cuda.memory._record_memory_history = _record_memory_history
torch.cuda.memory._snapshot = _snapshot
torch.cuda.memory_stats = memory_stats
torch.cuda.device_count = lambda: 1
torch.cuda.is_available = lambda: True

# CUDA's lazy initialization: run what was queued with torch.cuda._lazy_call.
queued = list(torch.cuda._queued_calls)
assert queued, "nothing queued with torch.cuda._lazy_call"
for item in queued:
    fn = item[0] if isinstance(item, tuple) else item
    if getattr(fn, "__module__", "").startswith("memscope_hook"):
        fn()
gated = os.environ.get("MEMSCOPE_STEPS") or os.environ.get("MEMSCOPE_CAPTURE_RANGE")
assert calls or gated, "the hook did not switch the history on at CUDA initialization"

nvtx_calls = []
if NVTX:
    import torch.cuda.nvtx as nvtx_module

    class FakeNvtx:
        def rangePushA(self, msg):
            nvtx_calls.append(("push", msg))
            return 0

        def rangePop(self):
            nvtx_calls.append(("pop",))
            return 0

    nvtx_module._nvtx = FakeNvtx()
    NVTX_NAME, NVTX_FIRST, NVTX_LAST = NVTX.split(":")[0], int(NVTX.split(":")[1]), int(NVTX.split(":")[2])

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 8), torch.randn(4, 1)
step = 0
while FOREVER or step < STEPS:
    if NVTX and step == NVTX_FIRST:
        torch.cuda.nvtx.range_push(NVTX_NAME)
    if step == OOM_AT:
        for observer in observers:
            observer(0, 1 << 30, 80 << 30, 1 << 20)
        os._exit(3)  # died of it: no atexit, no final hook.json
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    counters["allocation.all.allocated"] += 200
    counters["allocation.all.freed"] += 200
    opt.step()
    if NVTX and step == NVTX_LAST:
        torch.cuda.nvtx.range_pop()
    step += 1
    if FOREVER:
        time.sleep(0.05)
print("done")
