"""The C++ CPU-tensor capture library (libmemscope_torch_capture.so), via ctypes.

It hooks LibTorch's allocator reporting from C++, so it must be built for the
same torch release as the process: the major.minor versions are compared
before it is started.
"""
import ctypes
import os
import re

from . import safe_files

FILE_NAME = "cpu-events.bin"


def _major_minor(version):
    m = re.match(r"\s*(\d+)\.(\d+)", str(version))
    return (int(m.group(1)), int(m.group(2))) if m else None


class Capture:
    def __init__(self, lib, path, warn, idle=False):
        self._lib = lib
        self.path = path
        self._warn = warn
        self._flush_failed = False
        self.idle = idle           # installed with no log: windows open and close one
        self.writing = not idle    # a log is open

    def open_window(self, directory, alive_ns=0):
        """Idle mode: start a log in `directory`, beginning with the CPU
        allocations alive now, logged at alive_ns (0: now)."""
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, FILE_NAME)
        if self._lib.memscope_capture_open(os.fsencode(path), int(alive_ns)) != 0:
            self._warn("CPU tensors not captured in this window: memscope_capture_open failed")
            return False
        self.path = path
        self.writing = True
        self._flush_failed = False
        return True

    def close_window(self):
        if not self.writing:
            return
        self.writing = False
        if self._lib.memscope_capture_close() != 0:
            self._warn("CPU capture: writing cpu-events.bin failed at the window's end")

    def live_bytes(self):
        """Idle mode: the bytes of the CPU tensors' allocations alive (c10's reports)."""
        return int(self._lib.memscope_capture_live_bytes())

    def live_count(self):
        return int(self._lib.memscope_capture_live_count())

    def flush(self):
        if not self.writing:
            return
        rc = self._lib.memscope_capture_flush()
        if rc != 0 and not self._flush_failed:
            self._flush_failed = True
            self._warn("CPU capture stopped: writing cpu-events.bin failed (a full disk?); it "
                       "holds the allocations written before (memscope_capture_flush returned %d)"
                       % rc)

    def has_data(self):
        if self.idle and not self.writing and not os.path.exists(self.path or ""):
            return False
        try:
            return os.path.getsize(self.path) > 0
        except OSError:
            return False


def record_ops(capture):
    """Adds the library's at::RecordFunction callback (the ops around each
    allocation, MEMSCOPE_OPS=auto). (recorded, why not)."""
    if capture is None:
        return False, None
    try:
        fn = capture._lib.memscope_capture_record_ops
        fn.restype = ctypes.c_int
        fn.argtypes = []
        rc = fn()
    except AttributeError:
        return False, "the capture library predates op recording"
    if rc != 0:
        return False, "memscope_capture_record_ops returned %d" % rc
    return True, None


def start(library, torch_version, directory, warn, idle=False):
    """Load and start the library; None (with a warning) where it cannot run.
    idle: install the hook with no log (windows open one later)."""
    if not library:
        return None
    if not os.path.isfile(library):
        warn("CPU tensors not captured: capture library %s not found" % library)
        return None
    try:
        lib = ctypes.CDLL(library)
        lib.memscope_capture_torch_version.restype = ctypes.c_char_p
        lib.memscope_capture_torch_version.argtypes = []
        lib.memscope_capture_start.restype = ctypes.c_int
        lib.memscope_capture_start.argtypes = [ctypes.c_char_p]
        lib.memscope_capture_flush.restype = ctypes.c_int
        lib.memscope_capture_flush.argtypes = []
        if idle:
            lib.memscope_capture_install.restype = ctypes.c_int
            lib.memscope_capture_install.argtypes = []
            lib.memscope_capture_open.restype = ctypes.c_int
            lib.memscope_capture_open.argtypes = [ctypes.c_char_p, ctypes.c_int64]
            lib.memscope_capture_close.restype = ctypes.c_int
            lib.memscope_capture_close.argtypes = []
            lib.memscope_capture_live_bytes.restype = ctypes.c_int64
            lib.memscope_capture_live_bytes.argtypes = []
            lib.memscope_capture_live_count.restype = ctypes.c_int64
            lib.memscope_capture_live_count.argtypes = []
        built = (lib.memscope_capture_torch_version() or b"").decode("utf-8", "replace")
    except (OSError, AttributeError) as exc:
        warn("CPU tensors not captured: loading %s failed (%s)" % (library, exc))
        return None
    if _major_minor(built) is None or _major_minor(built) != _major_minor(torch_version):
        warn("CPU tensors not captured: capture library built for torch %s, this process runs %s"
             % (built, torch_version))
        return None
    if idle:
        rc = lib.memscope_capture_install()
        if rc != 0:
            warn("CPU tensors not captured: memscope_capture_install returned %d" % rc)
            return None
        return Capture(lib, None, warn, idle=True)
    try:
        safe_files.process_folder(directory)
        path = os.path.join(directory, FILE_NAME)
        # The library creates the file exclusively: a leftover of this
        # user's own folder goes first.
        if os.path.lexists(path):
            os.unlink(path)
    except OSError as exc:
        warn("CPU tensors not captured: %s" % exc)
        return None
    rc = lib.memscope_capture_start(os.fsencode(path))
    if rc != 0:
        warn("CPU tensors not captured: memscope_capture_start returned %d" % rc)
        return None
    return Capture(lib, path, warn)
