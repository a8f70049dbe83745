"""Training-phase state machine: turns hook events into closed time intervals.

Pure Python with no torch import, so it can be unit-tested on its own. Every
event takes one re-entrant lock: autograd runs backward hooks (checkpoint
recomputation, optimizer-in-backward) on its own threads, and a signal handler
may read the state while the main thread is in the middle of an update.

Steps are counted as users count loop iterations:
  - a step ends when an optimizer step ends (outside backward); the next one
    opens with the first zero_grad, forward or backward after it, so a
    zero_grad at the end of the loop belongs to the step it clears for;
  - k backwards before an optimizer step are one step (accumulation);
  - several optimizers with disjoint parameters that step in turn (a GAN's
    D and G) are one step: the second joins the step the first closed;
  - without any optimizer, a forward after a backward starts a new step; the
    steps split that way before a first optimizer step are merged into it.
A step that ended may still be extended (a joining optimizer) or merged: each
step record the log gets replaces those with the same or a higher number.
What follows the last step and holds no backward or optimizer (a trailing
zero_grad, an evaluation loop) is logged as phases without a step record; the
reader decides where it goes (core's hook log).
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
_RANK = {STEP: 0, FORWARD: 1, BACKWARD: 1, OPTIMIZER: 1, ZERO_GRAD: 1, RECOMPUTE: 2}


def _no_params(optimizer):
    return None


class Recorder:
    """Phases as seen from the main training loop.

    Counters, not stacks, follow nesting (the module hooks must stay cheap):
    module forwards, backward calls, checkpoint backwards, optimizer steps and
    zero_grad calls. Callbacks on_step_opened(step) / on_step_closed(step) run
    after the lock is released. params_of(optimizer) returns a frozenset of
    its parameters' ids (None: unknown, taken as disjoint from the others).
    keep=True keeps every record for snapshot() (tests); the session only
    drains them into its log.
    """

    def __init__(self, clock=time.time_ns, on_step_opened=None, on_step_closed=None,
                 params_of=_no_params, keep=True):
        self._clock = clock
        self._on_opened = on_step_opened
        self._on_closed = on_step_closed
        self._params_of = params_of
        self._keep = keep
        self._lock = threading.RLock()
        self.reset()

    def after_fork(self):
        """In a forked child: the lock may have been held by a thread that
        does not exist here. A new lock, then an empty state."""
        self._lock = threading.RLock()
        self.reset()

    def reset(self):
        """Forget everything (also what a forked child does with its copy)."""
        with self._lock:
            self._kept = []            # every record, for snapshot() (keep=True)
            self._pending = []         # records not yet drained into the log
            self._seq = 0
            self._open = {}            # kind -> start_ns; one open phase per kind
            self.step = 0              # the open step, or the next one to open
            self._step_open = False
            self._step_start = 0
            self._confirmed = False    # the open step holds a backward or an optimizer step
            self._step_backward = False
            self._step_forward = False
            self._step_opts = []       # optimizers that stepped in the open step
            self._last_closed = None   # (step, start, opts) of the step an optimizer ended
            self._soft_start = None    # (step, start) of a run of steps split by forwards
            self._opt_seen = False
            self.joined = False        # a second optimizer joined a step (GAN-style loop)
            self._trained = False      # a backward or an optimizer step ever ran
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
            self.root_forwards = 0     # outermost module forwards outside backward (tensor roles)
            self._notify = []          # step notifications to deliver outside the lock

    # ----------------------------------------------------------------- queries
    def has_phases(self):
        with self._lock:
            return self._seq > 0 or self._step_open or bool(self._open)

    def note(self, record):
        """Log a record that is not a phase (capture range, OOM, NVTX range)
        in the same sequence as the phases."""
        with self._lock:
            self._seq += 1
            record = dict(record, seq=self._seq)
            self._pending.append(record)

    def open_step_start(self):
        """The start (ns) of the open step, else 0."""
        with self._lock:
            return self._step_start if self._step_open else 0

    def current(self):
        """(step, phase): the open step's number (None between steps) and the
        innermost open phase (None when none is). The last step that closed
        is self.step - 1."""
        with self._lock:
            phase = None
            for kind in _INNER:   # the most nested first (recompute inside backward)
                if kind in self._open:
                    phase = kind
                    break
            return (self.step if self._step_open else None), phase

    def drain(self):
        """The records logged since the last drain, in order (dicts)."""
        with self._lock:
            out, self._pending = self._pending, []
        return out

    def open_records(self, now=None):
        """The open phases and the open step, closed at `now`, as records the
        log would get at exit. Changes nothing: a SIGTERM handler that does
        not exit leaves the process going on. The open step is included only
        when it holds a backward or an optimizer step (or the process never
        trained and it holds a forward): the reader places the rest."""
        with self._lock:
            if now is None:
                now = self._clock()
            out = []
            for kind in _INNER:
                if kind in self._open:
                    out.append(self._record(kind, self.step, self._open[kind], now, False))
            if self._step_open and self._step_counts():
                end = self._last_end if (self._deferred and not self._open) else now
                out.append(self._record(STEP, self.step, self._step_start, end, False,
                                        closed_by="exit"))
            return out

    def snapshot(self, now=None):
        """Every record plus the open ones closed at `now`, resolved as the
        reader resolves them (a step record replaces earlier ones with the same
        or a higher number; inner phases take the number of the step holding
        them, -1 if none), ordered by start. For tests (keep=True)."""
        with self._lock:
            records = list(self._kept) + self.open_records(now)
        steps = {}
        inner = []
        for r in records:
            if r["kind"] == STEP:
                for n in [n for n in steps if n >= r["step"]]:
                    del steps[n]
                steps[r["step"]] = r
            else:
                inner.append(r)
        out = [dict(kind=r["kind"], step=r["step"], start_ns=r["start_ns"], end_ns=r["end_ns"])
               for r in steps.values()]
        for r in inner:
            # The step that holds it (a joined or merged step renumbers its phases).
            holder = [s for s in out if s["kind"] == STEP
                      and s["start_ns"] <= r["start_ns"] and r["end_ns"] <= s["end_ns"]]
            out.append(dict(kind=r["kind"], step=holder[0]["step"] if holder else -1,
                            start_ns=r["start_ns"], end_ns=r["end_ns"]))
        out.sort(key=lambda p: (p["start_ns"], -p["end_ns"], _RANK.get(p["kind"], 3)))
        return out

    # --------------------------------------------------------------- internals
    def _record(self, kind, step, start, end, log=True, **extra):
        r = {"t": "phase", "kind": kind, "step": step, "start_ns": start,
             "end_ns": max(end, start)}
        r.update(extra)
        if log:
            self._seq += 1
            r["seq"] = self._seq
            self._pending.append(r)
            if self._keep:
                self._kept.append(r)
        return r

    def _step_counts(self):
        return self._confirmed or (not self._trained and self._step_forward)

    def _end(self, kind, t):
        start = self._open.pop(kind, None)
        if start is not None:
            self._record(kind, self.step, start, t)
            if t > self._last_end:
                self._last_end = t

    def _open_step(self, t):
        self._step_open = True
        self._step_start = t
        self._confirmed = False
        self._step_backward = False
        self._step_forward = False
        self._step_opts = []
        self._deferred = False
        self._last_end = t
        self._notify.append((True, self.step))

    def _close_step(self, t, closed_by):
        for kind in _INNER:
            self._end(kind, t)
        self._record(STEP, self.step, self._step_start, t, closed_by=closed_by)
        self._notify.append((False, self.step))
        self.step += 1
        self._step_open = False
        self._deferred = False

    def _begin_step(self, t):
        """An event that can start a step happened outside backward."""
        if self._step_open and self._deferred:
            # Optimizer-in-backward: the step ended with the last phase it
            # contains (the previous backward), not now.
            self._close_step(t if self._open else self._last_end, "optimizer")
            self._last_closed = None
        if not self._step_open:
            self._open_step(t)

    def _in_backward(self):
        return self._bwd > 0 or self._ckpt > 0

    def _deliver(self):
        with self._lock:
            pending, self._notify = self._notify, []
        for opened, step in pending:
            cb = self._on_opened if opened else self._on_closed
            if cb is not None:
                cb(step)

    def _joins_last_step(self, optimizer):
        """Another optimizer, on other parameters, right after the one that
        closed the last step: the same iteration (a GAN's G after D)."""
        last = self._last_closed
        if last is None or self._step_opts:
            return False
        mine = self._params_of(optimizer)
        for other in last[2]:
            if other is optimizer:
                return False
            theirs = self._params_of(other)
            if mine is not None and theirs is not None and not mine.isdisjoint(theirs):
                return False  # a replacement (a new optimizer over the same model)
        return True

    # ------------------------------------------------------------------ events
    def module_pre(self):
        """Global forward pre-hook: any nn.Module is about to run forward.
        Returns whether it is a recomputation (inside backward)."""
        with self._lock:
            if self._bwd or self._ckpt:
                # A forward inside backward is recomputation (checkpointing).
                self._rec += 1
                if self._rec == 1 and RECOMPUTE not in self._open:
                    self._open[RECOMPUTE] = self._clock()
                    self._rec_owner = "module"
                return True
            self._fwd += 1
            if self._fwd != 1:
                return False
            self.root_forwards += 1
            t = self._clock()
            if (self._step_open and self._step_backward and not self._opt_seen
                    and not self._opt_ids and not self._deferred):
                # No optimizer (so far): a forward after a backward is the next step.
                if self._soft_start is None:
                    self._soft_start = (self.step, self._step_start)
                self._close_step(t, "forward")
            self._begin_step(t)
            self._step_forward = True
            if FORWARD not in self._open:
                self._open[FORWARD] = t
        if self._notify:
            self._deliver()
        return False

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
                self._confirmed = self._step_backward = self._trained = True
                self._end(FORWARD, t)
                if BACKWARD not in self._open:
                    self._open[BACKWARD] = t
            else:
                # A nested backward (reentrant checkpoint differentiating its
                # recomputed block): the recomputation is over.
                self._end(RECOMPUTE, t)
                self._rec_owner = None
                self._rec = 0
        if self._notify:
            self._deliver()
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
        with self._lock:
            t = self._clock()
            if any(o is optimizer for o in self._opt_ids):
                # The same optimizer again: its last step raised and the
                # global post hook (2.0+) never ran. Forget that step.
                self._opt_ids = []
                self._end(OPTIMIZER, t)
            self._opt_ids.append(optimizer)
            if len(self._opt_ids) != 1:
                return
            self._trained = True
            if self._in_backward():
                # Optimizer-in-backward: nested in backward; the step ends
                # when the next one begins.
                self._opt_in_bwd = True
                if self._step_open:
                    self._deferred = True
                    self._confirmed = True
            else:
                self._opt_in_bwd = False
                if self._joins_last_step(optimizer):
                    # Reopen the step the previous optimizer closed; what ran
                    # since (its zero_grad, forward, backward) is part of it.
                    number, start, opts = self._last_closed
                    self.joined = True
                    if not self._step_open:
                        self._notify.append((True, number))
                    self.step, self._step_start, self._step_opts = number, start, list(opts)
                    self._step_open = True
                    self._deferred = False
                elif not self._step_open:
                    self._open_step(t)
                self._last_closed = None
                self._confirmed = True
                self._end(FORWARD, t)
            if OPTIMIZER not in self._open:
                self._open[OPTIMIZER] = t
        if self._notify:
            self._deliver()

    def optimizer_end(self, optimizer):
        with self._lock:
            idx = None
            for i in range(len(self._opt_ids) - 1, -1, -1):
                if self._opt_ids[i] is optimizer:
                    idx = i
                    break
            if idx is None:
                return
            del self._opt_ids[idx]
            if self._opt_ids:
                return
            t = self._clock()
            self._end(OPTIMIZER, t)
            if not self._opt_in_bwd and self._step_open:
                if self._soft_start is not None and not self._opt_seen:
                    # The steps split by forwards were the accumulation of
                    # this first optimizer step: one step, renumbered.
                    self.step, self._step_start = self._soft_start
                self._soft_start = None
                self._opt_seen = True
                self._step_opts.append(optimizer)
                self._last_closed = (self.step, self._step_start, tuple(self._step_opts))
                self._close_step(t, "optimizer")
            self._opt_seen = True
        if self._notify:
            self._deliver()

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
        if self._notify:
            self._deliver()

    def zero_grad_end(self):
        with self._lock:
            if not self._zg:
                return
            self._zg -= 1
            if not self._zg:
                self._end(ZERO_GRAD, self._clock())
