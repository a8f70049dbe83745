#!/usr/bin/env python3
"""Issue 64, class 2, the hook's side: what the hook writes under the output
folder (DIR/.memscope-hook/<pid>/{hook.json.tmp, hook.json, log.jsonl,
history-NNNN.pickle.tmp}) is never written through a symlink planted there,
and a planted DIR/.memscope-hook (a symlink to another folder) is refused,
not written into. No torch needed: the writers are driven directly."""
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_HOOK = os.path.normpath(os.path.join(HERE, "..", "..", "profiler", "pyhook"))
sys.path.insert(0, os.environ.get("MEMSCOPE_PYHOOK_DIR") or SOURCE_HOOK)

from memscope_hook import history, log, output  # noqa: E402


class FakeCuda:
    class memory:
        @staticmethod
        def _snapshot():
            return {"segments": [], "device_traces": []}


class FakeTorch:
    cuda = FakeCuda()


class HostileOutput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="memscope-hostile-output-")
        self.out = os.path.join(self.tmp, "out")
        os.makedirs(self.out)
        self.victim = os.path.join(self.tmp, "victim")
        with open(self.victim, "w") as f:
            f.write("precious")
        self.pid_dir = os.path.join(self.out, ".memscope-hook", "4242")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def victim_text(self):
        with open(self.victim) as f:
            return f.read()

    def plant(self, name):
        os.makedirs(self.pid_dir, mode=0o700, exist_ok=True)
        os.symlink(self.victim, os.path.join(self.pid_dir, name))

    def test_hook_json_tmp_symlink_is_not_written_through(self):
        self.plant("hook.json.tmp")
        output.HookFile(self.pid_dir).write({"format": "memscope-hook"})
        self.assertEqual(self.victim_text(), "precious")
        with open(os.path.join(self.pid_dir, "hook.json")) as f:
            self.assertIn("memscope-hook", f.read())
        self.assertFalse(os.path.islink(os.path.join(self.pid_dir, "hook.json")))

    def test_log_symlink_is_not_appended_to(self):
        self.plant("log.jsonl")
        warnings = []
        hook_log = log.HookLog(self.pid_dir, warnings.append)
        self.assertFalse(hook_log.append([{"t": "phase"}]))
        self.assertEqual(self.victim_text(), "precious")

    def test_dangling_log_symlink_creates_nothing(self):
        os.makedirs(self.pid_dir, mode=0o700)
        target = os.path.join(self.tmp, "created-elsewhere")
        os.symlink(target, os.path.join(self.pid_dir, "log.jsonl"))
        log.HookLog(self.pid_dir, lambda m: None).append([{"t": "phase"}])
        self.assertFalse(os.path.exists(target))

    def test_history_tmp_symlink_is_not_written_through(self):
        self.plant("history-0001.pickle.tmp")
        h = history.History.__new__(history.History)
        # Only what dump() touches, set by hand (no torch here).
        import threading
        h._lock = threading.RLock()
        h.enabled = True
        h._torch = FakeTorch()
        h._count = 0
        h.directory = self.pid_dir
        h.files = []
        h._next_cleared = False
        h._can_clear = False
        h._entries = lambda: 0
        self.assertTrue(h.dump())
        self.assertEqual(self.victim_text(), "precious")
        self.assertTrue(os.path.isfile(os.path.join(self.pid_dir, "history-0001.pickle")))

    def test_symlinked_hook_folder_is_refused_not_written_into(self):
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.makedirs(elsewhere)
        os.symlink(elsewhere, os.path.join(self.out, ".memscope-hook"))
        with self.assertRaises(OSError) as cm:
            output.HookFile(self.pid_dir).write({"format": "memscope-hook"})
        self.assertIn("symlink", str(cm.exception))
        self.assertEqual(os.listdir(elsewhere), [])
        hook_log = log.HookLog(self.pid_dir, lambda m: None)
        self.assertFalse(hook_log.append([{"t": "phase"}]))
        self.assertEqual(os.listdir(elsewhere), [])

    def test_symlinked_process_folder_is_refused(self):
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.makedirs(elsewhere)
        os.makedirs(os.path.dirname(self.pid_dir), mode=0o700)
        os.symlink(elsewhere, self.pid_dir)
        with self.assertRaises(OSError):
            output.HookFile(self.pid_dir).write({"format": "memscope-hook"})
        self.assertEqual(os.listdir(elsewhere), [])

    def test_folders_are_made_private(self):
        output.HookFile(self.pid_dir).write({"format": "memscope-hook"})
        for folder in (os.path.dirname(self.pid_dir), self.pid_dir):
            self.assertEqual(os.lstat(folder).st_mode & 0o777, 0o700)

    def test_own_leftover_is_replaced(self):
        os.makedirs(self.pid_dir, mode=0o700)
        with open(os.path.join(self.pid_dir, "hook.json.tmp"), "w") as f:
            f.write("left by a killed write")
        output.HookFile(self.pid_dir).write({"format": "memscope-hook"})
        self.assertFalse(os.path.exists(os.path.join(self.pid_dir, "hook.json.tmp")))

    def test_create_exclusive_refuses_a_symlink_race(self):
        # The race: the leftover is removed, then a symlink appears before the
        # create (made here between the two steps): O_EXCL refuses it.
        from memscope_hook import safe_files
        os.makedirs(self.pid_dir, mode=0o700)
        path = os.path.join(self.pid_dir, "hook.json.tmp")
        real_unlink = os.unlink

        def unlink_then_plant(p):
            try:
                real_unlink(p)
            finally:
                os.symlink(self.victim, p)
        safe_files.os.unlink = unlink_then_plant
        try:
            with self.assertRaises(FileExistsError):
                safe_files.create_exclusive(path)
        finally:
            safe_files.os.unlink = real_unlink
        self.assertEqual(self.victim_text(), "precious")


if __name__ == "__main__":
    unittest.main()
