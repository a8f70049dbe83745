"""Which op made the memory: the aten ops that ran, as op scopes.

MEMSCOPE_OPS (record --ops):
  auto      the capture library (C++) logs the ops in whose span an allocation
            was made, through at::RecordFunction, into cpu-events.bin; where
            it cannot load into this PyTorch, ops are not recorded and
            hook.json's hooks.ops says why;
  dispatch  this module: a TorchDispatchMode pushed for the whole run logs
            every op call (start_ns, end_ns, name, depth) into log.jsonl;
  off       none.

Dispatch records, like the module scopes: {"t": "op", "id": N, "name":
"aten::mm"} once per name, then batches {"t": "op_scopes", "base_ns": B,
"s": [start - B, end - start, id, depth, ...]} (docs/HOOK_FORMAT.md). The
mode sees ops below autograd (aten::mm, not aten::linear, which decomposes
before it), so depth is its own nesting, mostly 0.

Nothing here may break the program: a failure to push the mode is one
warning, and an error while recording one op drops that op, never the op's
own result or exception.
"""
import collections
import threading
import time

from .modules import BATCH, batches, split_queue

MAX_SCOPES = 50000000      # op calls recorded; beyond, they are counted only
MAX_NAMES = 100000         # distinct op names
MAX_NAME_BYTES = 1024      # core's kMaxCaptureOpName


def describe_auto(capture_started, recorded, why=None):
    """hook.json's hooks.ops for MEMSCOPE_OPS=auto."""
    if recorded:
        return "recorded: at::RecordFunction in the capture library (ops around allocations)"
    reason = why or ("the capture library did not load into this PyTorch"
                     if not capture_started else "the capture library could not add its callback")
    return ("not recorded: %s; memscope-cli record --ops dispatch records them through a "
            "TorchDispatchMode, at a cost (docs/PERFORMANCE.md)" % reason)


class OpRecorder:
    """Collects op scopes from any thread; the session's flush drains them."""

    def __init__(self, clock=time.time_ns):
        self._clock = clock
        self._tls = threading.local()
        self._ids = {}                 # op overload -> id
        self._out = collections.deque()
        self._lock = threading.Lock()  # interning only
        self.names = 0
        self.scopes = 0
        self.dropped = 0

    def _id(self, func):
        oid = self._ids.get(func)
        if oid is not None:
            return oid
        with self._lock:
            oid = self._ids.get(func)
            if oid is not None:
                return oid
            if self.names >= MAX_NAMES:
                return 0
            try:
                name = str(func._schema.name)
            except Exception:
                name = str(func)
            name = name.encode("utf-8", "replace")[:MAX_NAME_BYTES].decode("utf-8", "ignore")
            self.names += 1
            oid = self.names
            self._out.append({"t": "op", "id": oid, "name": name})
            self._ids[func] = oid
            return oid

    def call(self, func, args, kwargs):
        """Runs the op, recording its scope."""
        tls = self._tls
        depth = getattr(tls, "depth", 0)
        tls.depth = depth + 1
        start = self._clock()
        try:
            return func(*args, **kwargs)
        finally:
            tls.depth = depth
            try:
                if self.scopes + self.dropped < MAX_SCOPES:
                    oid = self._id(func)
                    if oid:
                        self._out.append((start, self._clock(), oid, depth))
                        self.scopes += 1
                    else:
                        self.dropped += 1
                else:
                    self.dropped += 1
            except Exception:
                self.dropped += 1

    def after_fork(self):
        """A forked child logs into a folder of its own: its names again."""
        self._lock = threading.Lock()
        self._ids = {}
        self._out = collections.deque()
        self.names = self.scopes = self.dropped = 0

    def drain(self):
        """Log records since the last drain: new names first, then scopes in
        batches of at most BATCH."""
        names, scopes = split_queue(self._out)
        return names + batches(scopes, "op_scopes")

    def describe(self):
        return {"names": self.names, "scopes": self.scopes, "dropped": self.dropped}


def install_dispatch(torch, recorder):
    """Pushes a TorchDispatchMode that records every op for the rest of the
    run. Returns hook.json's hooks.ops text; raises nothing."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except Exception as exc:
        return "not recorded: no TorchDispatchMode in this PyTorch (%s)" % exc

    class MemscopeOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return recorder.call(func, args, kwargs or {})

    try:
        mode = MemscopeOps()
        mode.__enter__()  # never left: the whole run
    except Exception as exc:
        return "not recorded: pushing the TorchDispatchMode failed (%s: %s)" % (
            type(exc).__name__, exc)
    return "recorded: TorchDispatchMode (every op call)"
