#!/usr/bin/env python3
"""The control socket (profiler/pyhook/memscope_hook/control.py) and attach
windows (attach.py) alone, without torch: the request parser's allowlist, the
private folder, a served socket refusing what it must and answering status,
and the window state machine on a fake session (steps from the next step's
start, ends once the last step has surely ended, joins, stop, seconds).

usage: test_control.py      (ctest: memscope_pyhook_control_unit)
"""
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_HOOK = os.path.normpath(os.path.join(HERE, "..", "..", "profiler", "pyhook"))
HOOK = os.environ.get("MEMSCOPE_PYHOOK_DIR") or SOURCE_HOOK
sys.path.insert(0, HOOK)

from memscope_hook import attach, control  # noqa: E402


class Parse(unittest.TestCase):
    def ok(self, line):
        return control.parse_request(line)

    def refused(self, line):
        with self.assertRaises(ValueError):
            control.parse_request(line)

    def test_allowed(self):
        self.assertEqual(self.ok(b'{"cmd":"status"}'), ("status", {}))
        self.assertEqual(self.ok(b'{"cmd":"stop"}'), ("stop", {}))
        self.assertEqual(self.ok(b'{"cmd":"start","window":"w-1.a","steps":2}'),
                         ("start", {"window": "w-1.a", "steps": 2}))
        self.assertEqual(self.ok(b'{"cmd":"start","window":"w","seconds":1}'),
                         ("start", {"window": "w", "seconds": 1.0}))
        self.assertEqual(self.ok(b'{"cmd":"start","window":"w","steps":2,"from_step":30}'),
                         ("start", {"window": "w", "steps": 2, "from_step": 30}))

    def test_refused(self):
        for line in (b"", b"x", b"[]", b'"status"', b"{}", b'{"cmd":1}', b'{"cmd":"exec"}',
                     b'{"cmd":"status","x":1}', b'{"cmd":"start"}',
                     b'{"cmd":"start","window":"../x"}', b'{"cmd":"start","window":"a/b"}',
                     b'{"cmd":"start","window":".hidden"}', b'{"cmd":"start","window":"a..b"}',
                     b'{"cmd":"start","window":""}', b'{"cmd":"start","window":"' + b"a" * 65 + b'"}',
                     b'{"cmd":"start","window":"w","steps":0}',
                     b'{"cmd":"start","window":"w","steps":1.5}',
                     b'{"cmd":"start","window":"w","steps":true}',
                     b'{"cmd":"start","window":"w","seconds":0}',
                     b'{"cmd":"start","window":"w","seconds":1e9}',
                     b'{"cmd":"start","window":"w","seconds":NaN}',
                     b'{"cmd":"start","window":"w","steps":1,"seconds":1}',
                     b'{"cmd":"start","window":"w","steps":1,"from_step":-1}',
                     b'{"cmd":"start","window":"w","steps":1,"from_step":true}',
                     b'{"cmd":"start","window":"w","steps":1,"from_step":2.5}',
                     b'{"cmd":"start","window":"w","steps":1,"from_step":2147483648}',
                     b'{"cmd":"start","window":"w","from_step":3}',
                     b'{"cmd":"status","cmd":"stop"}', b"\xff\xfe",
                     b"[" * 5000 + b"]" * 5000, b'{"cmd":"status"' + b" " * 5000 + b"}"):
            self.refused(line)


class Served(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="memscope-control-")
        self.calls = []

        def handler(cmd, args):
            self.calls.append((cmd, args))
            return {"ok": True, "cmd": cmd}

        os.environ.pop("XDG_RUNTIME_DIR", None)
        self.server = control.ControlServer(self.tmp, os.getpid(), handler, print)
        self.assertTrue(self.server.start())

    def tearDown(self):
        self.server.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def ask(self, data):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(self.server.path)
        s.sendall(data)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
        s.close()
        return json.loads(reply)

    def test_modes_and_answers(self):
        folder = os.path.dirname(self.server.path)
        self.assertEqual(stat.S_IMODE(os.lstat(folder).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.lstat(self.server.path).st_mode), 0o600)
        self.assertEqual(self.ask(b'{"cmd":"status"}\n'), {"ok": True, "cmd": "status"})
        reply = self.ask(b'{"cmd":"rm"}\n')
        self.assertFalse(reply["ok"])
        self.assertIn("refused", reply["error"])
        reply = self.ask(b"y" * 10000)
        self.assertIn("longer than", reply["error"])
        self.assertEqual(self.calls, [("status", {})])

    def test_close_removes_socket_and_folder(self):
        path = self.server.path
        self.server.close()
        self.assertFalse(os.path.exists(path))
        self.assertFalse(os.path.exists(os.path.dirname(path)))

    def test_group_readable_folder_refused(self):
        other = tempfile.mkdtemp(prefix="memscope-control-open-")
        try:
            os.chmod(other, 0o755)
            xdg = os.path.join(other, "memscope")
            os.mkdir(xdg, 0o755)
            os.environ["XDG_RUNTIME_DIR"] = other
            server = control.ControlServer(os.path.join(other, "out"), 1, lambda c, a: {}, print)
            # The open folder is refused; the output folder's private one is used.
            self.assertTrue(server.start())
            self.assertEqual(os.path.dirname(server.path),
                             os.path.join(other, "out", control.FOLDER_NAME))
            server.close()
        finally:
            os.environ.pop("XDG_RUNTIME_DIR", None)
            shutil.rmtree(other, ignore_errors=True)


class FakeRec:
    joined = False

    def open_step_start(self):
        return 100


class FakeSession:
    def __init__(self):
        self._lock = threading.RLock()
        self.rec = FakeRec()
        self.pid = 42
        self.events = []
        self.wanted = False

    def begin_window(self, directory, modules_now, alive_ns=0):
        self.events.append(("begin", directory, modules_now, alive_ns))

    def end_window(self, exit_reason):
        self.events.append(("end", exit_reason))

    def range_note(self, on, what):
        self.events.append(("note", on, dict(what)))

    def modules_wanted(self):
        return self.wanted

    def modules_on(self):
        self.events.append(("modules",))

    def warn(self, message):
        self.events.append(("warn", message))


class Windows(unittest.TestCase):
    def test_steps_window(self):
        s = FakeSession()
        w = attach.Windows(s)
        self.assertIsNone(w.start("a", "/out/a", steps=2))
        self.assertEqual(w.describe()["window"]["state"], "armed")
        self.assertIsNotNone(w.start("b", "/out/b"))       # one at a time
        w.step_closed(4)                                    # nothing open yet
        w.step_opened(5)
        self.assertTrue(w.recording)
        self.assertEqual(w.capture_document(), {"steps": [5, 6]})
        self.assertEqual(s.events[0], ("begin", "/out/a/.memscope-hook/42", True, 99))
        w.step_closed(5)
        self.assertTrue(w.recording)
        w.step_closed(6)
        self.assertFalse(w.recording)
        self.assertEqual(w.describe()["done"], [{"id": "a", "outcome": "steps"}])
        self.assertIsNotNone(w.start("a", "/out/a"))        # an id is used once

    def test_steps_window_from_a_step_every_rank_shares(self):
        s = FakeSession()
        w = attach.Windows(s)
        self.assertIsNone(w.start("a", "/out/a", steps=2, from_step=7))
        w.step_opened(6)                                    # before it: still armed
        self.assertFalse(w.recording)
        self.assertEqual(w.describe()["window"]["state"], "armed")
        w.step_closed(6)
        w.step_opened(7)
        self.assertTrue(w.recording)
        self.assertEqual(w.capture_document(), {"steps": [7, 8]})

    def test_joined_loop_waits_one_more_step(self):
        s = FakeSession()
        s.rec.joined = True
        w = attach.Windows(s)
        w.start("a", "/out/a", steps=1)
        w.step_opened(3)
        w.step_closed(3)
        self.assertTrue(w.recording)                        # a join may still extend it
        w.step_closed(4)
        self.assertFalse(w.recording)

    def test_stop_and_cancel(self):
        s = FakeSession()
        w = attach.Windows(s)
        w.start("a", "/out/a", steps=3)
        self.assertEqual(w.stop(), "a")                     # armed: dropped
        self.assertEqual(w.describe()["done"][0]["outcome"], "cancelled before its first step")
        self.assertFalse(any(e[0] == "begin" for e in s.events))
        w.start("b", "/out/b")                              # open now, until stop
        self.assertTrue(w.recording)
        self.assertEqual(s.events[-2][:3], ("begin", "/out/b/.memscope-hook/42", False))
        self.assertIsNone(w.capture_document())
        self.assertEqual(w.stop(), "b")
        self.assertEqual(s.events[-1], ("end", "window"))

    def test_seconds(self):
        s = FakeSession()
        w = attach.Windows(s)
        w.start("a", "/out/a", seconds=0.2)
        self.assertTrue(w.recording)
        deadline = time.time() + 10
        while w.recording and time.time() < deadline:
            time.sleep(0.02)
        self.assertFalse(w.recording)
        self.assertEqual(w.describe()["done"], [{"id": "a", "outcome": "seconds"}])

    def test_exit_mid_window(self):
        s = FakeSession()
        w = attach.Windows(s)
        w.start("a", "/out/a", steps=5)
        w.step_opened(0)
        w.exited("atexit")
        self.assertEqual(s.events[-1], ("end", "atexit"))
        self.assertIn("exited", w.describe()["done"][0]["outcome"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
