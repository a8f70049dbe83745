"""Attach windows: an attachable process (`record --idle`,
memscope.attachable()) records nothing until a window opens, from
`memscope-cli attach` over the control socket or memscope.start() in the
process itself.

A window writes the parts of one recording, as `record` does, to
  <root>/.memscope-hook/<pid>/
where <root> is <output folder>/.memscope-attach/<window id> for attach (the
CLI merges it when the window ends) or the folder memscope.start() was given.

  steps N     from the next step's start to the end of the N-th step: the
              history goes on when step A opens and off once step A+N-1 has
              surely ended (the rules of capture_range.py); hook.json's
              "capture" says {"steps": [A, A+N-1]}, so the merge crops the
              trace to exactly those steps;
  seconds S   from now for S seconds (a timer thread);
  neither     until stop (detach, Ctrl-C of attach, memscope.stop()).

While a window is open everything the hook records is on: phases, module
scopes (from the next step on: a forward already running has no stack),
tensor roles (re-logged from the window's start), the allocator history and
the CPU log (which starts with the CPU allocations alive at the window's
start). At its end the history is dumped and switched off, the CPU log
closed, and hook.json written complete with exit "window".
"""
import os
import threading
import time

ATTACH_FOLDER = ".memscope-attach"
KEEP_DONE = 32


class Windows:
    def __init__(self, session):
        self._s = session
        self.window = None        # the window armed or open: dict
        self.done = []            # [{"id", "outcome"}] of ended windows, newest last
        self._timer = None

    # ------------------------------------------------------------ queries
    @property
    def recording(self):
        w = self.window
        return w is not None and w["state"] == "on"

    def describe(self):
        w = self.window
        out = None
        if w is not None:
            out = {k: w[k] for k in ("id", "state", "steps", "seconds", "first_step",
                                    "last_step", "started_ns", "root") if k in w}
        return {"window": out, "done": list(self.done)}

    def capture_document(self):
        w = self.window
        if w is None or w.get("first_step") is None or w.get("steps") is None:
            return None
        return {"steps": [w["first_step"], w["last_step"]]}

    # ------------------------------------------------------------ control
    def start(self, window_id, root, steps=None, seconds=None, from_step=None):
        """Arm (steps) or open (otherwise) a window writing under `root`.
        A steps window opens with the next step, or with the first step
        numbered `from_step` or later (attach gives every rank of a job the
        same one, so that their windows hold the same steps). Returns None,
        or why it cannot."""
        s = self._s
        with s._lock:
            if self.window is not None:
                return "a window is already %s (%s)" % (
                    "open" if self.window["state"] == "on" else "waiting for the next step",
                    self.window["id"])
            if any(d["id"] == window_id for d in self.done):
                return "window %s was used already" % window_id
            self.window = {"id": window_id, "root": root, "state": "armed", "steps": steps,
                           "seconds": seconds, "first_step": None, "last_step": None,
                           "from_step": from_step}
            if steps is None:
                self._begin(None)
                if seconds is not None:
                    timer = threading.Timer(seconds, self._timeout, args=(window_id,))
                    timer.daemon = True
                    timer.start()
                    self._timer = timer
        return None

    def stop(self, outcome="stopped"):
        """Ends the window now (a window still waiting for its step is dropped)."""
        s = self._s
        with s._lock:
            w = self.window
            if w is None:
                return None
            if w["state"] == "armed":
                self.window = None
                self._remember(w["id"], "cancelled before its first step")
                return w["id"]
            self._end(outcome)
            return w["id"]

    def _timeout(self, window_id):
        try:
            with self._s._lock:
                if self.window is not None and self.window["id"] == window_id:
                    self._end("seconds")
        except Exception as exc:
            self._s.warn("ending a window failed: %s: %s" % (type(exc).__name__, exc))

    # --------------------------------------------------- step notifications
    def step_opened(self, step):
        w = self.window
        if w is None:
            return
        with self._s._lock:
            w = self.window
            if w is None:
                return
            if w["state"] == "armed" and w["steps"] is not None:
                if w["from_step"] is not None and step < w["from_step"]:
                    return
                w["first_step"] = step
                w["last_step"] = step + w["steps"] - 1
                self._begin(step)
            elif w["state"] == "on":
                if w["last_step"] is not None and step > w["last_step"] + 1:
                    self._end("steps")
                elif self._s.modules_wanted():
                    self._s.modules_on()

    def step_closed(self, step):
        w = self.window
        if w is None or w["state"] != "on" or w["last_step"] is None:
            return
        with self._s._lock:
            w = self.window
            if w is None or w["state"] != "on" or w["last_step"] is None:
                return
            last = w["last_step"]
            sure = last >= 1 and not self._s.rec.joined
            if step > last or (step == last and sure):
                self._end("steps")

    # ------------------------------------------------------------ internals
    def _begin(self, step):
        s = self._s
        w = self.window
        w["state"] = "on"
        w["started_ns"] = time.time_ns()
        # A step window's CPU allocations alive at its start are logged just
        # before its step began: the merge carries them in as alive then.
        alive_ns = s.rec.open_step_start() - 1 if step is not None else 0
        s.begin_window(os.path.join(w["root"], ".memscope-hook", str(s.pid)),
                       modules_now=step is not None, alive_ns=max(alive_ns, 0))
        what = {"window": w["id"]}
        if step is not None:
            what["step"] = step
        s.range_note(True, what)

    def _end(self, outcome):
        s = self._s
        w = self.window
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        s.range_note(False, {"window": w["id"]})
        s.end_window("window")
        self.window = None
        self._remember(w["id"], outcome)

    def exited(self, reason):
        """The process exits with the window open: it ends here, complete."""
        w = self.window
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._s.range_note(False, {"window": w["id"]})
        self._s.end_window(reason)
        self.window = None
        self._remember(w["id"], "the process exited (%s)" % reason)

    def _remember(self, window_id, outcome):
        self.done.append({"id": window_id, "outcome": outcome})
        del self.done[:-KEEP_DONE]

    def after_fork(self):
        """A forked child records no window of its parent's."""
        self.window = None
        self.done = []
        self._timer = None
