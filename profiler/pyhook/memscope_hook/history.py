"""The CUDA caching allocator's history: switched on when CUDA initializes
(or, with a capture range, when the range begins), dumped with
torch.cuda.memory._snapshot() at exit, on SIGTERM, on an out-of-memory error
(the allocator's OOM observer, 2.0+), at the end of the capture range, and
before the ring buffer (max_entries) would drop entries (unless ring=True:
then only the last max_entries are kept, by design).

Everything is looked up on torch at call time, not at install time: CUDA may
initialize long after torch is imported (and the tests swap in a stand-in).
"""
import inspect
import os
import pickle
import threading

from . import safe_files

# Counters of torch.cuda.memory_stats() that drive the wrap estimate: an alloc
# adds one trace entry, a free two (free_requested, free_completed), a segment
# alloc or free one.
_ALLOCS = "allocation.all.allocated"
_FREES = "allocation.all.freed"
_SEG_ALLOCS = "segment.all.allocated"
_SEG_FREES = "segment.all.freed"


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


class History:
    def __init__(self, torch, max_entries, directory, warn, gated=False, ring=False,
                 on_oom=None, cpp_frames=False):
        self._torch = torch
        # record --ops frames: C++ frames in each entry's stack (stacks="all"),
        # from which core infers the op that made each allocation.
        self.cpp_frames = cpp_frames
        self.max_entries = max_entries
        self.directory = directory
        self._warn = warn
        self._lock = threading.RLock()
        self.enabled = False
        self.api = None
        self.reason = "CUDA was not initialized in this process"
        self.files = []                 # [{"file", "cleared_before"}], oldest first
        self._count = 0
        self._can_clear = False
        self._next_cleared = False
        self._baseline = 0
        self._gated = gated             # on only inside the capture range
        self._want_on = not gated
        self._ring = ring
        self._cuda_ready = False
        self._on_oom = on_oom           # on_oom(device, bytes): the session's OOM handling
        self.oom_observer = None        # "attached" | "unavailable: <why>"

    # ------------------------------------------------------------------ setup
    def install(self):
        cuda = getattr(self._torch, "cuda", None)
        if cuda is None:
            self.reason = "torch.cuda missing"
            return
        lazy = getattr(cuda, "_lazy_call", None)
        if lazy is not None:
            # Runs at CUDA's lazy initialization (or now, if it already ran).
            lazy(self._enable_at_init)
        elif cuda.is_initialized():
            self._enable_at_init()
        else:
            self.reason = "torch.cuda._lazy_call missing and CUDA not initialized at torch import"

    def forget(self, reason):
        """A forked child: the parent's CUDA state is not usable here."""
        self._lock = threading.RLock()  # the parent's may have been held at fork
        with self._lock:
            self._cuda_ready = False
            self.enabled = False
            self.reason = reason
            self.files = []
            self._count = 0

    def _enable_at_init(self):
        self._cuda_ready = True
        self._attach_oom_observer()
        with self._lock:
            if not self._want_on:
                self.reason = "waiting for the capture range to begin"
                return
            self._switch_on_now()

    def _switch_on_now(self):
        try:
            self._enable(clear=self._can_clear)
        except Exception as exc:
            self.enabled = False
            self.reason = "_record_memory_history failed: %s: %s" % (type(exc).__name__, exc)
            self._warn("CUDA allocator history not recorded (%s)" % self.reason)

    def _attach_oom_observer(self):
        attach = getattr(getattr(self._torch, "_C", None), "_cuda_attach_out_of_memory_observer",
                         None)
        if attach is None:
            self.oom_observer = ("unavailable: no torch._C._cuda_attach_out_of_memory_observer "
                                 "in this PyTorch (an OOM is dumped only at exit)")
            return
        on_oom = self._on_oom

        def observer(device, alloc, device_allocated, device_free):
            # Runs inside the failing allocation, before the error reaches the
            # program: whether it catches the error or dies, the moment is kept.
            try:
                if on_oom is not None:
                    on_oom(device, alloc)
            except Exception as exc:
                self._warn("dumping the history at an OOM failed: %s: %s"
                           % (type(exc).__name__, exc))

        try:
            attach(observer)
            self.oom_observer = "attached"
        except Exception as exc:
            self.oom_observer = "unavailable: %s: %s" % (type(exc).__name__, exc)

    # --------------------------------------------------------- capture range
    def switch_on(self):
        """The capture range begins: record from now on."""
        with self._lock:
            self._want_on = True
            if self._cuda_ready and not self.enabled:
                self._switch_on_now()

    def switch_off(self):
        """The capture range ended: dump what it recorded, then stop."""
        with self._lock:
            self._want_on = False
            if not self.enabled:
                return False
            wrote = self.dump(reenable=False)
            try:
                self._disable()
            except Exception as exc:
                self._warn("switching the allocator history off failed: %s: %s"
                           % (type(exc).__name__, exc))
            return wrote

    def _disable(self):
        api, record, _ = self._api()
        if api == "2.1+":
            record(enabled=None)
        elif api == "1.13":
            record(False)
        self.enabled = False
        self.reason = "switched off at the end of the capture range"

    def _api(self):
        memory = self._torch.cuda.memory
        record = getattr(memory, "_record_memory_history", None)
        if record is None:
            return None, None, {}
        # 2.1+: _record_memory_history(enabled="all", *args, **kwargs) forwards
        # to _record_memory_history_impl, whose signature has the parameters.
        impl = getattr(memory, "_record_memory_history_impl", None)
        params = _params(impl if impl is not None else record)
        if "max_entries" in params:
            return "2.1+", record, params
        return "1.13", record, params

    def _enable(self, clear):
        api, record, params = self._api()
        if api is None:
            self.reason = "torch.cuda.memory._record_memory_history missing"
            return
        if api == "2.1+":
            kwargs = dict(enabled="all", context="alloc",
                          stacks="all" if self.cpp_frames else "python",
                          max_entries=self.max_entries)
            for optional in ("compile_context", "global_record_annotations"):
                if optional in params:
                    kwargs[optional] = True
            if clear:
                kwargs["clear_history"] = True
            record(**kwargs)
            self._can_clear = "clear_history" in params
        else:
            if self.cpp_frames and not self.enabled:
                self._warn("record --ops frames needs PyTorch 2.1+ (stacks=\"all\"); this "
                           "PyTorch's history has no C++ frames, so no op is recorded")
            kwargs = {}
            if "trace_alloc_max_entries" in params:
                kwargs["trace_alloc_max_entries"] = self.max_entries
            if "trace_alloc_record_context" in params:
                kwargs["trace_alloc_record_context"] = True
            record(True, **kwargs)
            if "trace_alloc_max_entries" not in params and not self.enabled:
                self._warn("this PyTorch's _record_memory_history has no trace_alloc_max_entries: "
                           "the snapshots hold the allocator state, no allocation trace")
        self.enabled = True
        self.api = api
        self.reason = ""

    # ------------------------------------------------------------------ dumps
    def _entries(self):
        cuda = self._torch.cuda
        total = 0
        for device in range(cuda.device_count()):
            stats = cuda.memory_stats(device=device)
            total += (stats.get(_ALLOCS, 0) + 2 * stats.get(_FREES, 0)
                      + stats.get(_SEG_ALLOCS, 0) + stats.get(_SEG_FREES, 0))
        return total

    def maybe_dump(self):
        """At the end of each step: dump before the ring buffer wraps.
        Returns whether a file was written."""
        if not self.enabled or self._ring:
            return False
        with self._lock:
            if self._entries() - self._baseline <= self.max_entries // 2:
                return False
            return self.dump()

    def dump(self, reenable=True):
        with self._lock:
            if not self.enabled:
                return False
            snapshot = self._torch.cuda.memory._snapshot()
            self._count += 1
            name = "history-%04d.pickle" % self._count
            safe_files.process_folder(self.directory)
            path = os.path.join(self.directory, name)
            with os.fdopen(safe_files.create_exclusive(path + ".tmp"), "wb") as f:
                pickle.dump(snapshot, f, protocol=4)
            os.replace(path + ".tmp", path)
            del snapshot
            self.files.append({"file": name, "cleared_before": self._next_cleared})
            try:
                self._baseline = self._entries()
            except Exception:
                pass
            if self._can_clear and reenable:
                # 2.5+: start the next file empty instead of overlapping this one.
                self._enable(clear=True)
                self._next_cleared = True
            return True

    def describe(self):
        return {"enabled": self.enabled, "api": self.api, "max_entries": self.max_entries,
                "reason": self.reason, "ring": self._ring,
                "oom_observer": self.oom_observer}
