"""log.jsonl: what the hook saw, appended as it happens (one JSON object per
line), so that a process killed at any moment (kill -9, os._exit, the OOM
killer) keeps everything written before: the closed phases of every completed
step, annotations, OOMs, the capture range.

Lines are built whole and written with one os.write on an O_APPEND file, so a
reader sees complete lines and at most one cut short at the end. Each record
carries a sequence number ("seq") given under the recorder's lock: a signal
handler that appends while the main thread is between building and writing
its lines cannot reorder what the reader resolves. Writing never raises: a full
or failing disk is reported once (warn) and the records wait, up to a bound,
for the next try.
"""
import json
import os
import threading

from . import safe_files

FILE_NAME = "log.jsonl"
_MAX_WAITING = 200000  # records kept in memory while the disk refuses them


class HookLog:
    def __init__(self, directory, warn):
        self.directory = directory
        self._warn = warn
        self._lock = threading.RLock()
        self._fd = None
        self._waiting = []
        self._dropped = 0
        self._failed = None   # the error of the last failed write, once reported
        self.lines_written = 0

    def after_fork(self, directory):
        """A forked child writes a log of its own (the fd is the parent's)."""
        self._lock = threading.RLock()
        self.directory = directory
        self._fd = None
        self._waiting = []
        self._dropped = 0
        self._failed = None
        self.lines_written = 0

    @property
    def failed(self):
        return self._failed

    def _open(self):
        safe_files.process_folder(self.directory)
        return safe_files.open_append(os.path.join(self.directory, FILE_NAME))

    def append(self, records):
        """Write `records` (dicts) and any that waited; True if all are out."""
        with self._lock:
            if records:
                self._waiting.extend(records)
            if not self._waiting:
                return True
            data = "".join(json.dumps(r, separators=(",", ":")) + "\n"
                           for r in self._waiting).encode()
            written = 0
            try:
                if self._fd is None:
                    self._fd = self._open()
                while written < len(data):
                    n = os.write(self._fd, data[written:])
                    if n <= 0:
                        raise OSError("write returned %d" % n)
                    written += n
            except OSError as exc:
                self._note_failure(exc, written)
                return False
            self.lines_written += len(self._waiting)
            self._waiting = []
            if self._failed is not None:
                self._warn("phase log written again after: %s" % self._failed)
                self._failed = None
            return True

    def _note_failure(self, exc, written):
        if written and self._fd is not None:
            # A line cut short mid-file would hide every line after it: drop
            # the part that went out and retry whole lines later.
            try:
                end = os.lseek(self._fd, 0, os.SEEK_END)
                os.ftruncate(self._fd, max(0, end - written))
            except OSError:
                pass
        if self._failed is None:
            self._failed = "%s: %s" % (type(exc).__name__, exc)
            self._warn("the phase log could not be written (%s); phases wait in memory"
                       % self._failed)
        if len(self._waiting) > _MAX_WAITING:
            drop = len(self._waiting) - _MAX_WAITING
            self._dropped += drop
            del self._waiting[:drop]

    def close(self):
        with self._lock:
            if self._fd is not None:
                try:
                    os.close(self._fd)
                except OSError:
                    pass
                self._fd = None
