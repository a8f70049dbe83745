"""One recording per process: ties the phase recorder, the allocator history,
the CPU capture library, the profiler watch and the signal handlers to the
files in $MEMSCOPE_OUTPUT_DIR/.memscope-hook/<pid>/:

  log.jsonl  phases and annotations, appended as they close: flushed at every
             step end and at least once a second (a flusher thread), so that
             kill -9, os._exit or an OOM kill lose at most the last second;
  hook.json  what the process is (pid, rank, argv, versions, hooks), the
             history dumps, warnings; rewritten atomically when the first step
             opens, after each dump and at exit (then with the phases still
             open, closed at that moment).
"""
import atexit
import os
import platform
import sys
import threading
import time

from . import (apply, attach, capture, capture_range, control, history, log, modules, ops, output,
               phases, profiler_watch, signals, tensor_roles, torch_hooks)

FLUSH_INTERVAL_S = 1.0


def _cwd():
    try:
        return os.getcwd()
    except OSError:   # the folder was removed under the job
        return ""


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
        self._flusher = None
        self.idle = cfg.idle            # attachable: records only inside windows (attach.py)
        self.windows = attach.Windows(self)
        self.control = None
        self._modules_wanted = False
        self.api_windows = {}           # window id -> folder: memscope.start()'s
        self._summary_wanted = threading.Event()   # top asked for categories
        self._summary_ready = threading.Event()
        self._summary = None            # (time_ns, device, roles, modules), made at a step end
        self._bind_pid()
        self.rec = phases.Recorder(on_step_opened=self._step_opened,
                                   on_step_closed=self._step_closed,
                                   params_of=torch_hooks.optimizer_params, keep=False)
        self.modules = modules.ModuleRecorder(depth=cfg.module_depth)
        self.ops = ops.OpRecorder() if cfg.ops == "dispatch" else None
        # Through the recorder's note: role records are sequenced with the phases.
        self.roles = (tensor_roles.TensorRoles(self.rec.note, is_tensor=torch.is_tensor)
                      if cfg.tensor_roles else None)
        self.log = log.HookLog(self.dir, self.warn)
        self.history = history.History(torch, cfg.max_entries, self.dir, self.warn,
                                       gated=cfg.gated or cfg.idle, ring=cfg.ring,
                                       on_oom=self._oom, cpp_frames=cfg.ops == "frames")
        self.range = capture_range.CaptureRange(cfg, self.history, self.rec.note, self.rec)

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
                                         self.dir, self.warn, idle=self.idle)
        except Exception as exc:
            self.warn("CPU tensors not captured: %s: %s" % (type(exc).__name__, exc))
        self.hooks = torch_hooks.install(self.torch, self.rec, self.warn,
                                         nvtx=self.range if self.cfg.nvtx_range else None,
                                         modules=self.modules,
                                         module_backward=self.cfg.module_backward,
                                         roles=self.roles, late=self.cfg.late)
        self.hooks["tensor_roles"] = self._roles_hook()
        self.apply = None
        if self.cfg.apply_plan is not None or self.cfg.apply_problem is not None:
            try:
                self.apply = apply.install(self.torch, self.cfg.apply_plan,
                                           self.cfg.apply_problem, self.modules)
            except Exception as exc:
                self.apply = apply.Outcome("?")
                self.apply.wanted.append("plan")
                self.apply.refuse("installing it failed (%s: %s)" % (type(exc).__name__, exc))
        self.hooks["ops"] = self._install_ops()
        if self.idle:
            self._quiet()
        try:
            self.history.install()
        except Exception as exc:
            self.history.reason = "install failed: %s: %s" % (type(exc).__name__, exc)
        profiler_watch.install(self.torch, self._profiler_started)
        signals.install(self.finish, self._note_exit, self.warn, self.cfg.signal_ack_fd)
        atexit.register(self._at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)
        self._start_flusher()
        if self.idle:
            self.start_control()

    def _install_ops(self):
        """hook.json's hooks.ops: how the ops that made the memory are recorded."""
        if self.cfg.ops == "off":
            return "off: MEMSCOPE_OPS=off (record --ops off)"
        if self.cfg.ops == "frames":
            return ("frames: the CUDA allocator history records C++ frames (stacks=\"all\", "
                    "PyTorch 2.1+); each allocation's op is inferred from them when the trace "
                    "is opened (CPU tensors get none)")
        if self.cfg.ops == "dispatch":
            how = ops.install_dispatch(self.torch, self.ops)
            if not how.startswith("recorded"):
                self.ops = None
                self.warn("ops %s; recording without them" % how)
            return how
        try:
            recorded, why = capture.record_ops(self.capture)
        except Exception as exc:
            recorded, why = False, "%s: %s" % (type(exc).__name__, exc)
        return ops.describe_auto(self.capture is not None, recorded, why)

    def start_control(self):
        """Serve the control socket (attach, detach, top)."""
        if self.control is None:
            self.control = control.ControlServer(self.cfg.output_dir, self.pid,
                                                 self.handle_control, self.warn)
            if not self.control.start():
                self.control = None
        return self.control is not None

    # ----------------------------------------------------------- attach windows
    def _quiet(self):
        """Idle: module scopes and tensor roles off (the phases still count steps)."""
        self.modules.depth = 0
        self._modules_wanted = False
        if self.roles is not None:
            self.roles.enabled = False

    def modules_wanted(self):
        return self._modules_wanted

    def modules_on(self):
        """From a step's start (no module stack is half built then)."""
        self._modules_wanted = False
        self.modules.reset()    # the window's log defines its modules again
        self.modules.depth = self.cfg.module_depth

    def _discard(self):
        self.modules.drain()
        if self.ops is not None:
            self.ops.drain()
        self.rec.drain()

    def range_note(self, on, what):
        self.rec.note(dict(t="capture", on=on, time_ns=time.time_ns(), **what))

    def begin_window(self, directory, modules_now, alive_ns=0):
        """attach.Windows: start recording into `directory` (a process folder)."""
        with self._lock:
            self._discard()
            self.dir = directory
            self.file = output.HookFile(directory)
            self.log = log.HookLog(directory, self.warn)
            self.history.directory = directory
            self.history.files = []
            self._wrote = False
            self._exit_reason = None
            self.window_started_ns = time.time_ns()
            if self.capture is not None and self.capture.idle:
                self.capture.open_window(directory, alive_ns)
            if self.roles is not None:
                self.roles.reset()
                self.roles.enabled = True
            if modules_now:
                self.modules_on()
            else:
                self._modules_wanted = self.cfg.module_depth > 0
            try:
                self.history.switch_on()
            except Exception as exc:
                self.warn("switching the allocator history on failed: %s: %s"
                          % (type(exc).__name__, exc))
            self._safe_write("running", complete=False)

    def end_window(self, exit_reason):
        """The window ends: dump, write everything complete, back to idle."""
        with self._lock:
            try:
                self.history.switch_off()
            except Exception as exc:
                self.warn("allocator history dump at the window's end failed: %s: %s"
                          % (type(exc).__name__, exc))
            self._safe_write(exit_reason, complete=True)
            if self.capture is not None and self.capture.idle:
                self.capture.close_window()
            self._quiet()

    def handle_control(self, cmd, args):
        """A request from the control socket (already checked by control.py)."""
        if cmd == "status":
            return dict(ok=True, **self.status(categories=args.get("categories", False)))
        if cmd == "start":
            root = os.path.join(self.cfg.output_dir, attach.ATTACH_FOLDER, args["window"])
            why = self.windows.start(args["window"], root, steps=args.get("steps"),
                                     seconds=args.get("seconds"),
                                     from_step=args.get("from_step"))
            if why is not None:
                return {"ok": False, "error": why}
            return dict(ok=True, **self.windows.describe())
        if cmd == "stop":
            stopped = self.windows.stop()
            return dict(ok=True, stopped=stopped, **self.windows.describe())
        return {"ok": False, "error": "unknown command"}

    def status(self, categories=False):
        """What `top` and `attach` see: where the job is and what it holds."""
        step, phase = self.rec.current()
        out = {"pid": self.pid, "rank": self.cfg.rank, "local_rank": self.cfg.local_rank,
               "argv": [str(a) for a in sys.argv][:16], "output_dir": self.cfg.output_dir,
               "time_ns": time.time_ns(), "step": step, "phase": phase,
               "steps_done": self.rec.step,
               "torch": str(self.torch.__version__)}
        out.update(self.windows.describe())
        out["memory"] = self._memory(categories)
        return out

    def _memory(self, categories=False):
        """Live and reserved bytes, each with its source."""
        mem = {}
        cuda = getattr(self.torch, "cuda", None)
        try:
            if cuda is not None and cuda.is_initialized():
                mem["cuda"] = {"live": int(cuda.memory_allocated()),
                               "reserved": int(cuda.memory_reserved()),
                               "peak": int(cuda.max_memory_allocated()),
                               "source": "torch.cuda.memory_allocated/memory_reserved "
                                         "(this process's current device)"}
        except Exception:
            pass
        summary = self._wait_for_summary() if categories else None
        if summary is not None:
            at_ns, device, roles, top_modules = summary
            mem["categories"] = roles
            mem["modules"] = [[name, n] for name, n in top_modules]
            mem["categories_at_ns"] = at_ns
            mem["categories_source"] = (
                "the parameters, gradients and optimizer state of the models and optimizers "
                "the hook has seen run, on device %d (-1: CPU), at the end of the last step"
                % device)
        if self.capture is not None and self.capture.idle:
            try:
                mem["cpu"] = {"live": self.capture.live_bytes(),
                              "tensors": self.capture.live_count(),
                              "source": "c10 CPU allocator reports counted by memscope's "
                                        "capture library (no caching: reserved = live)"}
            except Exception:
                pass
        return mem

    # Tensors are read only by the training thread, at a step's end: read from
    # the control thread while an op changes them in C++ (zero_grad), they crash.
    SUMMARY_WAIT_S = 1.0

    def _wait_for_summary(self):
        """Asks the training thread for the categories at its next step end;
        waits up to SUMMARY_WAIT_S, else the last one made (or None)."""
        if self.roles is None:
            return None
        self._summary_ready.clear()
        self._summary_wanted.set()
        self._summary_ready.wait(self.SUMMARY_WAIT_S)
        return self._summary

    def _make_summary(self):
        self._summary_wanted.clear()
        try:
            device = -1
            cuda = getattr(self.torch, "cuda", None)
            if cuda is not None and cuda.is_initialized():
                device = int(cuda.current_device())
            roles, top_modules = self.roles.summary(device)
            self._summary = (time.time_ns(), device, roles, top_modules)
        except Exception:
            pass
        self._summary_ready.set()

    def _roles_hook(self):
        """hook.json's hooks.tensor_roles: what the role records come from."""
        if self.roles is None:
            return "off: MEMSCOPE_TENSOR_ROLES=0 (record --no-tensor-roles)"
        if self.hooks.get("forward", "").startswith("unavailable"):
            return "unavailable: needs the global module forward hooks"
        return ("parameters and buffers at root forwards, positional inputs, gradients at "
                "optimizer steps (after backward without one), optimizer state after steps")

    def _forked(self):
        """A forked child (DataLoader worker) has a copy of everything: start
        over as an empty recording of its own, which it writes only if it
        records something. Locks are new: a thread that held one at the fork
        does not exist here."""
        try:
            self._lock = threading.RLock()
            self._bind_pid()
            self.rec.after_fork()
            self.modules.after_fork()
            if self.ops is not None:
                self.ops.after_fork()
            if self.roles is not None:
                self.roles.reset()
            self.log.after_fork(self.dir)
            self.history.directory = self.dir
            self.history.forget("forked child: CUDA is not usable here")
            self.capture = None  # the library's state belongs to the parent
            self.profiler = []
            self._exit_reason = None
            self._wrote = False
            self._flusher = None
            self.windows.after_fork()
            if getattr(self, "apply", None) is not None:
                self.apply.child = True   # the parent says what became of the policy
            if self.control is not None:
                self.control.forget()   # the socket answers for the parent
                self.control = None
            self._start_flusher()
        except Exception:
            pass

    def _start_flusher(self):
        if self._flusher is not None:
            return
        stop = threading.Event()

        def run():
            signals.block_in_this_thread()
            while not stop.wait(FLUSH_INTERVAL_S):
                try:
                    self.flush()
                except Exception:
                    pass

        thread = threading.Thread(target=run, name="memscope-flush", daemon=True)
        thread.start()
        self._flusher = (thread, stop)

    # ------------------------------------------------------------- callbacks
    def _step_opened(self, step):
        self.range.step_opened(step)
        self.windows.step_opened(step)
        # The first step: leave a hook.json behind in case of SIGKILL.
        if not self._wrote and self.recording:
            self._safe_write("running", complete=False)

    def _step_closed(self, step):
        dumps = len(self.history.files)
        self.range.step_closed(step)
        self.windows.step_closed(step)
        if self._summary_wanted.is_set():
            self._make_summary()
        if not self.recording:
            return
        try:
            self.history.maybe_dump()
        except Exception as exc:
            self.warn("allocator history dump failed: %s: %s" % (type(exc).__name__, exc))
        if len(self.history.files) != dumps:
            self._safe_write("running", complete=False)  # lists the new dump; flushes too
        else:
            self.flush()

    def _oom(self, device, alloc):
        self.rec.note({"t": "oom", "time_ns": time.time_ns(), "device": int(device),
                       "bytes": int(alloc)})
        self.history.dump()
        self._safe_write("running", complete=False)

    def _profiler_started(self, what):
        with self._lock:
            self.profiler.append({"time_ns": time.time_ns(), "what": what})
            if not self._printed_profiler:
                self._printed_profiler = True
                sys.stderr.write(profiler_watch.MESSAGE + "\n")

    def _note_exit(self, reason):
        self._exit_reason = reason

    # ----------------------------------------------------------------- output
    @property
    def recording(self):
        """Not idle, or inside a window."""
        return not self.idle or self.windows.recording

    def _has_content(self):
        return (self.rec.has_phases() or bool(self.history.files)
                or (self.capture is not None and self.capture.has_data()))

    def flush(self):
        """Phases closed since the last flush go to the log; the CPU capture
        writes its buffer."""
        with self._lock:
            if not self.recording:
                self._discard()
                return
            if self.capture is not None:
                try:
                    self.capture.flush()
                except Exception as exc:
                    self.warn("memscope_capture_flush failed: %s" % exc)
            # Module records go through the recorder for their sequence
            # numbers (a line written twice by a signal handler is one).
            for r in self.modules.drain():
                self.rec.note(r)
            if self.ops is not None:
                for r in self.ops.drain():
                    self.rec.note(r)
            records = self.rec.drain()
            if records:
                self.log.append(records)
            elif self.log.failed is not None:
                self.log.append([])  # retry what waited (the disk may have space again)

    def document(self, exit_reason, complete, open_phases=(), open_scopes=()):
        now = time.time_ns()
        return {
            "format": output.FORMAT, "version": output.VERSION,
            "pid": self.pid, "rank": self.cfg.rank, "local_rank": self.cfg.local_rank,
            "python": platform.python_version(), "torch": str(self.torch.__version__),
            # What the run is called (script and rank): sys.argv as the script
            # sees it, and the interpreter's own command line where Python has it.
            "argv": [str(a) for a in sys.argv],
            "orig_argv": [str(a) for a in getattr(sys, "orig_argv", sys.argv)],
            # Where it ran, so that the job can be run again (the GUI's
            # "Record with this policy").
            "cwd": _cwd(),
            "clock": "CLOCK_REALTIME ns",
            "started_ns": self.started_ns, "ended_ns": now,
            "complete": complete, "exit": exit_reason,
            "hooks": dict(self.hooks),
            "log": log.FILE_NAME,
            "open_phases": list(open_phases),
            "modules": self.modules.describe(self.hooks.get("module_backward")),
            "open_module_scopes": list(open_scopes),  # [start_ns, end_ns, id, kind]
            "capture": (self.windows.capture_document() if self.idle
                        else self.cfg.capture_document()),
            "window": (self.windows.window or {}).get("id") if self.idle else None,
            "histories": list(self.history.files),
            "history": self.history.describe(),
            "cpu_events": {"file": capture.FILE_NAME} if self.capture is not None else None,
            "profiler": list(self.profiler),
            "warnings": list(self.warnings) + self._roles_warnings(),
            "apply": self.apply.document() if getattr(self, "apply", None) else None,
        }

    def _roles_warnings(self):
        # Counted as they happen (the hooks stay silent), said once per write.
        if self.roles is None or not self.roles.unreadable:
            return []
        return ["tensor roles: the storage of %d tensors could not be read (sparse or "
                "unusual tensors); their allocations' categories are inferred"
                % self.roles.unreadable]

    def write(self, exit_reason, complete):
        with self._lock:
            if not self.recording:
                return
            self.flush()
            if not self._has_content():
                self.file.remove_if_empty()
                return
            # Only the final write carries the phases still open: an interim
            # one's would be stale after a kill.
            open_phases = self.rec.open_records() if complete else ()
            open_scopes = self.modules.open_scopes() if complete else ()
            self.file.write(self.document(exit_reason, complete, open_phases, open_scopes))
            self._wrote = True

    def _safe_write(self, exit_reason, complete):
        try:
            self.write(exit_reason, complete)
        except Exception as exc:
            self.warn("writing hook.json failed: %s: %s" % (type(exc).__name__, exc))

    def finish(self, reason):
        """Exit (atexit) or a fatal signal: dump the history, write the final
        hook.json. May run more than once (a SIGTERM handler that does not
        exit, then atexit): each run rewrites the whole picture. SIGINT and
        SIGTERM wait until it is done."""
        with signals.deferred():
            if self._exit_reason is None or reason != "atexit":
                self._exit_reason = reason
            if self.idle:
                # A window open at exit is finished as its end would finish it.
                with self._lock:
                    if self.windows.recording:
                        self.windows.exited(self._exit_reason)
                    if reason in ("atexit", "SIGTERM") and self.control is not None:
                        self.control.close()
                return
            try:
                self.history.dump()
            except Exception as exc:
                self.warn("allocator history dump at exit failed: %s: %s"
                          % (type(exc).__name__, exc))
            self._safe_write(self._exit_reason, complete=True)

    def _at_exit(self):
        if os.getpid() != self.pid:
            return
        try:
            self.finish("atexit")
        except KeyboardInterrupt:
            # A second Ctrl-C that waited for the final write: everything is
            # written; the process is exiting anyway.
            pass
