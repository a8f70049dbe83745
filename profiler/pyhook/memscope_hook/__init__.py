"""memscope's in-process recorder for PyTorch programs (see README.md).

activate() only installs an import watcher; the work starts when torch has
finished importing (Session.install).

In-process control, for notebooks and scripts (import memscope_hook as memscope):

  memscope.attachable(path=None)   serve a control socket, so that
                                   `memscope-cli attach PATH|PID` can record windows
  memscope.start(path, steps=None, seconds=None)
                                   record a window into PATH now (steps: N whole
                                   steps from the next step's start)
  memscope.stop()                  end it; its traces are merged into PATH
                                   (memscope-cli record --merge) and returned
  with memscope.recording(path):   start and stop around a block

Steps are counted from the moment memscope first ran in the process.
"""
import contextlib
import os
import sys
import threading
import time

_session = None
_api_lock = threading.Lock()
_window_count = 0


def report_failure(what):
    """The one line a failure prints; the program goes on unrecorded."""
    try:
        sys.stderr.write("memscope hook: %s; recording without it\n" % what)
    except Exception:
        pass


def activate():
    import os
    from . import config, torch_watch
    cfg = config.Config.from_env()
    # The acknowledgement pipe is record's to the process it started. The
    # processes this one starts (a launcher's ranks) do not get the pipe
    # (subprocess closes it), and an fd number they reuse for a file of their
    # own must not receive signal numbers: the variable stops here.
    os.environ.pop("MEMSCOPE_SIGNAL_ACK_FD", None)
    torch_watch.when_imported(lambda torch: _start(cfg, torch))


def _start(cfg, torch):
    global _session
    try:
        from .session import Session
        session = Session(cfg, torch)
        session.install()
        _session = session
    except Exception as exc:
        report_failure("installing the PyTorch hooks failed (%s: %s)" % (type(exc).__name__, exc))


# ---------------------------------------------------------------- in-process API
def _here():
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def _find_capture_library():
    """The CPU capture library: $MEMSCOPE_TORCH_CAPTURE_LIBRARY, else beside
    this package's install (<prefix>/share/memscope/pyhook -> <prefix>/lib)."""
    named = os.environ.get("MEMSCOPE_TORCH_CAPTURE_LIBRARY")
    if named:
        return named
    prefix = os.path.normpath(os.path.join(_here(), "..", "..", ".."))
    lib = os.path.join(prefix, "lib")
    candidates = [os.path.join(lib, "libmemscope_torch_capture.so")]
    try:
        candidates += [os.path.join(lib, d, "libmemscope_torch_capture.so")
                       for d in sorted(os.listdir(lib))]
    except OSError:
        pass
    for c in candidates:
        if os.path.isfile(c):
            return c
    return None


def _find_cli():
    named = os.environ.get("MEMSCOPE_CLI")
    if named:
        return named
    prefix = os.path.normpath(os.path.join(_here(), "..", "..", ".."))
    candidate = os.path.join(prefix, "bin", "memscope-cli")
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    import shutil
    return shutil.which("memscope-cli")


def _session_for(path):
    """The process's session; made idle (recording nothing) if memscope did
    not start with the process."""
    global _session
    if _session is not None:
        return _session
    import torch
    from . import config
    from .session import Session
    env = os.environ
    out = os.path.abspath(path if path is not None
                          else env.get("MEMSCOPE_OUTPUT_DIR") or "memscope-traces")
    # Ranks out of range are refused, never narrowed (config._first_int_env);
    # what was refused is said on stderr, as the hook says its warnings.
    warnings = []
    cfg = config.Config(output_dir=out, idle=True, capture_library=_find_capture_library(),
                        rank=config._first_int_env(env, config.RANK_VARIABLES, warnings),
                        local_rank=config._first_int_env(env, config.LOCAL_RANK_VARIABLES,
                                                         warnings))
    for w in warnings:
        sys.stderr.write("memscope: %s\n" % w)
    cfg.late = True
    session = Session(cfg, torch)
    session.install()
    _session = session
    return session


def attachable(path=None):
    """Let `memscope-cli attach` record windows of this process (its traces go
    to `path`, default $MEMSCOPE_OUTPUT_DIR or ./memscope-traces). Returns the
    control socket's path, or None (with the reason on stderr)."""
    with _api_lock:
        session = _session_for(path)
        if not session.idle:
            sys.stderr.write("memscope: this process is recorded whole by memscope-cli record "
                             "already; nothing to attach\n")
            return None
        if not session.start_control():
            sys.stderr.write("memscope: not attachable: %s\n" % session.warnings[-1:])
            return None
        return session.control.path


def start(path, steps=None, seconds=None):
    """Record a window into folder `path` from now (steps=N: N whole steps
    from the next step's start; seconds=S: S seconds; neither: until stop()).
    Returns the window's id."""
    global _window_count
    from . import attach, control
    if steps is not None:
        control._steps(steps)
    if seconds is not None:
        control._seconds(seconds)
    with _api_lock:
        session = _session_for(path)
        if not session.idle:
            raise RuntimeError("this process is recorded whole by memscope-cli record already")
        _window_count += 1
        window = "py-%s-%d-%d" % (time.strftime("%Y%m%d-%H%M%S", time.gmtime()),
                                  os.getpid(), _window_count)
        root = os.path.join(os.path.abspath(path), attach.ATTACH_FOLDER, window)
        why = session.windows.start(window, root, steps=steps, seconds=seconds)
        if why is not None:
            raise RuntimeError("memscope.start: %s" % why)
        session.api_windows[window] = os.path.abspath(path)
        return window


def stop(wait=True):
    """End the window start() opened (a steps/seconds window may have ended
    by itself) and merge its traces into its folder with memscope-cli.
    Returns the paths of the traces written (empty if none could be)."""
    with _api_lock:
        session = _session
        if session is None or not session.api_windows:
            return []
        session.windows.stop()
        windows, session.api_windows = dict(session.api_windows), {}
    traces = []
    for window, folder in windows.items():
        traces += _merge(folder, window)
    return traces


def _merge(folder, window):
    import subprocess
    cli = _find_cli()
    parts = os.path.join(folder, ".memscope-attach", window)
    if cli is None:
        if os.path.isdir(parts):
            sys.stderr.write("memscope: the window's parts are in %s; finish them with: "
                             "memscope-cli record --merge %s\n" % (parts, folder))
        return []
    try:
        subprocess.run([cli, "record", "--merge", folder], stdout=subprocess.DEVNULL,
                       timeout=600, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        sys.stderr.write("memscope: merging %s failed (%s)\n" % (parts, exc))
        return []
    suffix = "-%s.memscope" % window
    try:
        return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(suffix))
    except OSError:
        return []


@contextlib.contextmanager
def recording(path, steps=None, seconds=None):
    """with memscope.recording(path): ... records the block's window."""
    start(path, steps=steps, seconds=seconds)
    traces = []
    try:
        yield traces
    finally:
        traces.extend(stop())
