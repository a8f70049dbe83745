"""hook.json: built from the session's state, written atomically."""
import json
import os
import threading

from . import safe_files

FORMAT = "memscope-hook"
VERSION = 2


class HookFile:
    def __init__(self, directory):
        self.directory = directory
        self._lock = threading.RLock()
        self._generation = 0
        self._depth = 0

    def write(self, document):
        """Write hook.json.tmp, then rename it over hook.json.

        A signal handler may write while the main thread is in here (same
        thread, so the RLock lets it in): the nested write uses its own temporary
        name, and the interrupted, older write then drops its file instead of
        replacing the newer one."""
        data = json.dumps(document, indent=1)
        with self._lock:
            self._generation += 1
            mine = self._generation
            tmp_name = "hook.json.tmp" if self._depth == 0 else "hook.json.tmp%d" % self._depth
            self._depth += 1
            try:
                safe_files.process_folder(self.directory)
                tmp = os.path.join(self.directory, tmp_name)
                with os.fdopen(safe_files.create_exclusive(tmp), "w") as f:
                    f.write(data)
                if self._generation == mine:
                    os.replace(tmp, os.path.join(self.directory, "hook.json"))
                else:
                    os.unlink(tmp)
            finally:
                self._depth -= 1

    def remove_if_empty(self):
        """A process that recorded nothing leaves no folder behind."""
        try:
            os.rmdir(self.directory)
        except OSError:
            pass
