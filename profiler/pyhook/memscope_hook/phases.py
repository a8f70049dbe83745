"""Training-phase state machine: turns hook events into closed time intervals.

Pure Python with no torch import, so it can be unit-tested on its own. Every
event takes one re-entrant lock: autograd runs backward hooks (checkpoint
recomputation, optimizer-in-backward) on its own threads, and a signal handler
may read the state while the main thread is in the middle of an update.
"""
import threading
import time

STEP = "step"
FORWARD = "forward"
BACKWARD = "backward"
RECOMPUTE = "recompute"
OPTIMIZER = "optimizer"
ZERO_GRAD = "zero_grad"

# Inner phases first: closing a step closes what it contains before itself.
_INNER = (RECOMPUTE, ZERO_GRAD, OPTIMIZER, BACKWARD, FORWARD)


class Recorder:
    """Phases as seen from the main training loop.

    Counters, not stacks, follow nesting (the module hooks must stay cheap):
    module forwards, backward calls, checkpoint backwards, optimizer steps and
    zero_grad calls. Callbacks on_step_opened(step) / on_step_closed(step) run
    after the lock is released.
    """

    def __init__(self, clock=time.time_ns, on_step_opened=None, on_step_closed=None):
        self._clock = clock
        self._lock = threading.RLock()
        self._on_opened = on_step_opened
        self._on_closed = on_step_closed
        self.reset()

    def reset(self):
        """Forget everything (also what a forked child does with its copy)."""
        with self._lock:
            self._closed = []          # (kind, step, start_ns, end_ns)
            self._open = {}            # kind -> start_ns; one open phase per kind
            self.step = 0              # the open step, or the next one to open
            self._step_open = False
            self._step_start = 0
            self._deferred = False     # an optimizer ran inside backward: the step ends
            self._last_end = 0         # ... at the end of its last phase, once the next begins
            self._fwd = 0              # module forward depth outside backward
            self._bwd = 0              # nested torch.autograd.backward/grad calls
            self._ckpt = 0             # CheckpointFunction.backward calls in progress
            self._rec = 0              # module forward depth inside backward
            self._rec_owner = None     # "module" | "checkpoint": who opened recompute
            self._opt_ids = []         # optimizers whose step is running, outermost first
            self._opt_in_bwd = False
            self._zg = 0
            self._pending = []         # step notifications to deliver outside the lock

    # ----------------------------------------------------------------- queries
    def has_phases(self):
        with self._lock:
            return bool(self._closed) or self._step_open

    def snapshot(self, now=None):
        """Closed phases plus the open ones closed at `now`, ordered by start
        (a parent before the children that start with it). Does not change the
        state: the process may go on after an interim write or a SIGTERM whose
        handler chose not to exit."""
        with self._lock:
            if now is None:
                now = self._clock()
            out = list(self._closed)
            for kind in _INNER:
                if kind in self._open:
                    out.append((kind, self.step, self._open[kind], max(now, self._open[kind])))
            if self._step_open:
                # An optimizer-in-backward step with nothing open ended with
                # its backward, as if the next step had begun.
                end = self._last_end if (self._deferred and not self._open) else now
                out.append((STEP, self.step, self._step_start, max(end, self._step_start)))
        rank = {STEP: 0, FORWARD: 1, BACKWARD: 1, OPTIMIZER: 1, ZERO_GRAD: 1, RECOMPUTE: 2}
        out.sort(key=lambda p: (p[2], -p[3], rank.get(p[0], 3)))
        return [{"kind": k, "step": s, "start_ns": a, "end_ns": b} for k, s, a, b in out]

    # --------------------------------------------------------------- internals
    def _end(self, kind, t):
        start = self._open.pop(kind, None)
        if start is not None:
            self._closed.append((kind, self.step, start, max(t, start)))
            if t > self._last_end:
                self._last_end = t

    def _open_step(self, t):
        self._step_open = True
        self._step_start = t
        self._deferred = False
        self._last_end = t
        self._pending.append((True, self.step))

    def _close_step(self, t):
        for kind in _INNER:
            self._end(kind, t)
        self._closed.append((STEP, self.step, self._step_start, max(t, self._step_start)))
        self._pending.append((False, self.step))
        self.step += 1
        self._step_open = False
        self._deferred = False

    def _begin_step(self, t):
        """An event that can start a step happened outside backward."""
        if self._step_open and self._deferred:
            # Optimizer-in-backward: the step ended with the last phase it
            # contains (the previous backward), not now.
            self._close_step(t if self._open else self._last_end)
        if not self._step_open:
            self._open_step(t)

    def _in_backward(self):
        return self._bwd > 0 or self._ckpt > 0

    def _drain(self):
        with self._lock:
            pending, self._pending = self._pending, []
        for opened, step in pending:
            cb = self._on_opened if opened else self._on_closed
            if cb is not None:
                cb(step)

    # ------------------------------------------------------------------ events
    def module_pre(self):
        """Global forward pre-hook: any nn.Module is about to run forward."""
        with self._lock:
            if self._bwd or self._ckpt:
                # A forward inside backward is recomputation (checkpointing).
                self._rec += 1
                if self._rec == 1 and RECOMPUTE not in self._open:
                    self._open[RECOMPUTE] = self._clock()
                    self._rec_owner = "module"
                return
            self._fwd += 1
            if self._fwd != 1:
                return
            t = self._clock()
            self._begin_step(t)
            if FORWARD not in self._open:
                self._open[FORWARD] = t
        if self._pending:
            self._drain()

    def module_post(self):
        """Global forward hook: a module's forward returned."""
        with self._lock:
            if self._rec:
                self._rec -= 1
                if not self._rec and self._rec_owner == "module":
                    self._end(RECOMPUTE, self._clock())
                    self._rec_owner = None
            elif self._fwd:
                self._fwd -= 1

    def backward_begin(self, is_grad=False):
        """torch.autograd.backward / grad starts. Returns whether the call is
        tracked (pass the result to backward_end)."""
        with self._lock:
            if is_grad and self._fwd and not self._bwd:
                # autograd.grad inside a module forward (gradient penalties,
                # physics-informed losses): part of the forward.
                return False
            self._bwd += 1
            t = self._clock()
            if self._bwd == 1:
                # A forward that raised never ran its post hook: start over.
                self._fwd = 0
                self._begin_step(t)
                self._end(FORWARD, t)
                if BACKWARD not in self._open:
                    self._open[BACKWARD] = t
            else:
                # A nested backward (reentrant checkpoint differentiating its
                # recomputed block): the recomputation is over.
                self._end(RECOMPUTE, t)
                self._rec_owner = None
                self._rec = 0
        if self._pending:
            self._drain()
        return True

    def backward_end(self):
        with self._lock:
            if not self._bwd:
                return
            self._bwd -= 1
            if self._bwd:
                return
            t = self._clock()
            self._rec = 0
            self._rec_owner = None
            self._end(RECOMPUTE, t)
            self._end(BACKWARD, t)

    def checkpoint_begin(self):
        """torch.utils.checkpoint.CheckpointFunction.backward starts: it
        recomputes the block (modules or plain functions) before it
        differentiates it. Returns whether it opened the recompute phase."""
        with self._lock:
            self._ckpt += 1
            if RECOMPUTE in self._open:
                return False
            self._open[RECOMPUTE] = self._clock()
            self._rec_owner = "checkpoint"
            return True

    def checkpoint_end(self, opened):
        with self._lock:
            if self._ckpt:
                self._ckpt -= 1
            if opened and self._rec_owner == "checkpoint":
                self._end(RECOMPUTE, self._clock())
                self._rec_owner = None

    def optimizer_begin(self, optimizer):
        key = id(optimizer)
        with self._lock:
            t = self._clock()
            if key in self._opt_ids:
                # The same optimizer again: its last step raised and the
                # global post hook (2.0+) never ran. Forget that step.
                self._opt_ids = []
                self._end(OPTIMIZER, t)
            self._opt_ids.append(key)
            if len(self._opt_ids) != 1:
                return
            if self._in_backward():
                # Optimizer-in-backward: nested in backward; the step ends
                # when the next one begins.
                self._opt_in_bwd = True
                if self._step_open:
                    self._deferred = True
            else:
                self._opt_in_bwd = False
                if not self._step_open:
                    self._open_step(t)
                self._end(FORWARD, t)
            if OPTIMIZER not in self._open:
                self._open[OPTIMIZER] = t
        if self._pending:
            self._drain()

    def optimizer_end(self, optimizer):
        key = id(optimizer)
        with self._lock:
            if key not in self._opt_ids:
                return
            # Remove the innermost occurrence.
            idx = len(self._opt_ids) - 1 - self._opt_ids[::-1].index(key)
            del self._opt_ids[idx]
            if self._opt_ids:
                return
            t = self._clock()
            self._end(OPTIMIZER, t)
            if not self._opt_in_bwd and self._step_open:
                self._close_step(t)
        if self._pending:
            self._drain()

    def zero_grad_begin(self):
        with self._lock:
            self._zg += 1
            if self._zg != 1:
                return
            t = self._clock()
            if not (self._in_backward() or self._opt_ids):
                self._begin_step(t)
                self._end(FORWARD, t)
            if ZERO_GRAD not in self._open:
                self._open[ZERO_GRAD] = t
        if self._pending:
            self._drain()

    def zero_grad_end(self):
        with self._lock:
            if not self._zg:
                return
            self._zg -= 1
            if not self._zg:
                self._end(ZERO_GRAD, self._clock())
