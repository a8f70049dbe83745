"""One recording per process: ties the phase recorder, the allocator history,
the CPU capture library, the profiler watch and the signal handlers to
hook.json in $MEMSCOPE_OUTPUT_DIR/.memscope-hook/<pid>/."""
import atexit
import os
import platform
import sys
import threading
import time

from . import capture, history, output, phases, profiler_watch, signals, torch_hooks


class Session:
    def __init__(self, cfg, torch):
        self.cfg = cfg
        self.torch = torch
        self.warnings = list(cfg.warnings)
        self.hooks = {}
        self.profiler = []
        self.capture = None
        self._exit_reason = None
        self._wrote = False
        self._printed_profiler = False
        self._lock = threading.RLock()
        self._bind_pid()
        self.rec = phases.Recorder(on_step_opened=self._step_opened,
                                   on_step_closed=self._step_closed)
        self.history = history.History(torch, cfg.max_entries, self.dir, self.warn)

    def _bind_pid(self):
        self.pid = os.getpid()
        self.started_ns = time.time_ns()
        self.dir = self.cfg.process_dir(self.pid)
        self.file = output.HookFile(self.dir)

    def warn(self, message):
        if message not in self.warnings:
            self.warnings.append(message)

    # ----------------------------------------------------------------- install
    def install(self):
        # The CPU capture first: it should see the first tensor the program makes.
        try:
            self.capture = capture.start(self.cfg.capture_library, self.torch.__version__,
                                         self.dir, self.warn)
        except Exception as exc:
            self.warn("CPU tensors not captured: %s: %s" % (type(exc).__name__, exc))
        self.hooks = torch_hooks.install(self.torch, self.rec, self.warn)
        try:
            self.history.install()
        except Exception as exc:
            self.history.reason = "install failed: %s: %s" % (type(exc).__name__, exc)
        profiler_watch.install(self.torch, self._profiler_started)
        signals.install(self.finish, self._note_exit, self.warn)
        atexit.register(self._at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self):
        """A forked child (DataLoader worker) has a copy of everything: start
        over as an empty recording of its own, which it writes only if it
        records something."""
        try:
            self._bind_pid()
            self.rec.reset()
            self.history.directory = self.dir
            self.history.forget("forked child: CUDA is not usable here")
            self.capture = None  # the library's state belongs to the parent
            self.profiler = []
            self._exit_reason = None
            self._wrote = False
        except Exception:
            pass

    # ------------------------------------------------------------- callbacks
    def _step_opened(self, step):
        # The first step: leave a hook.json behind in case of SIGKILL.
        if not self._wrote:
            self._safe_write("running", complete=False)

    def _step_closed(self, step):
        try:
            if self.history.maybe_dump():
                self._safe_write("running", complete=False)
        except Exception as exc:
            self.warn("allocator history dump failed: %s: %s" % (type(exc).__name__, exc))

    def _profiler_started(self, what):
        with self._lock:
            self.profiler.append({"time_ns": time.time_ns(), "what": what})
            if not self._printed_profiler:
                self._printed_profiler = True
                sys.stderr.write(profiler_watch.MESSAGE + "\n")

    def _note_exit(self, reason):
        self._exit_reason = reason

    # ----------------------------------------------------------------- output
    def _has_content(self):
        return (self.rec.has_phases() or bool(self.history.files)
                or (self.capture is not None and self.capture.has_data()))

    def document(self, exit_reason, complete):
        now = time.time_ns()
        return {
            "format": output.FORMAT, "version": output.VERSION,
            "pid": self.pid, "rank": self.cfg.rank, "local_rank": self.cfg.local_rank,
            "python": platform.python_version(), "torch": str(self.torch.__version__),
            # What the run is called (script and rank): sys.argv as the script
            # sees it, and the interpreter's own command line where Python has it.
            "argv": [str(a) for a in sys.argv],
            "orig_argv": [str(a) for a in getattr(sys, "orig_argv", sys.argv)],
            "clock": "CLOCK_REALTIME ns",
            "started_ns": self.started_ns, "ended_ns": now,
            "complete": complete, "exit": exit_reason,
            "hooks": dict(self.hooks),
            "phases": self.rec.snapshot(now),
            "histories": list(self.history.files),
            "history": self.history.describe(),
            "cpu_events": {"file": capture.FILE_NAME} if self.capture is not None else None,
            "profiler": list(self.profiler),
            "warnings": list(self.warnings),
        }

    def write(self, exit_reason, complete):
        with self._lock:
            if self.capture is not None:
                try:
                    self.capture.flush()
                except Exception as exc:
                    self.warn("memscope_capture_flush failed: %s" % exc)
            if not self._has_content():
                self.file.remove_if_empty()
                return
            self.file.write(self.document(exit_reason, complete))
            self._wrote = True

    def _safe_write(self, exit_reason, complete):
        try:
            self.write(exit_reason, complete)
        except Exception as exc:
            self.warn("writing hook.json failed: %s: %s" % (type(exc).__name__, exc))

    def finish(self, reason):
        """Exit (atexit) or a fatal signal: dump the history, write the final
        hook.json. May run more than once (a SIGTERM handler that does not
        exit, then atexit): each run rewrites the whole picture."""
        if self._exit_reason is None or reason != "atexit":
            self._exit_reason = reason
        try:
            self.history.dump()
        except Exception as exc:
            self.warn("allocator history dump at exit failed: %s: %s" % (type(exc).__name__, exc))
        self._safe_write(self._exit_reason, complete=True)

    def _at_exit(self):
        if os.getpid() != self.pid:
            return
        self.finish("atexit")
