#!/usr/bin/env python3
"""Op scopes in the hook (profiler/pyhook/memscope_hook/ops.py): the recorder
and its log records with fake ops, MEMSCOPE_OPS in config.py, what hook.json
says for auto, and (where torch imports) the TorchDispatchMode on real ops.

usage: test_ops.py      (ctest: memscope_pyhook_ops_unit)
"""
import os
import sys
import unittest

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_HOOK = os.path.normpath(os.path.join(HERE, "..", "..", "profiler", "pyhook"))
HOOK = os.environ.get("MEMSCOPE_PYHOOK_DIR") or SOURCE_HOOK
sys.path.insert(0, HOOK)

from memscope_hook import capture, config, ops  # noqa: E402


class Schema:
    def __init__(self, name):
        self.name = name


class FakeOp:
    def __init__(self, name, body=None):
        self._schema = Schema(name)
        self._body = body

    def __call__(self, *args, **kwargs):
        return self._body(*args, **kwargs) if self._body else None


class Clock:
    def __init__(self):
        self.now = 1000

    def __call__(self):
        self.now += 10
        return self.now


class RecorderTest(unittest.TestCase):
    def test_nested_ops_are_logged_with_names_once_and_depths(self):
        rec = ops.OpRecorder(clock=Clock())
        empty = FakeOp("aten::empty", lambda: "buffer")
        addmm = FakeOp("aten::addmm", lambda: rec.call(empty, (), {}))
        self.assertEqual(rec.call(addmm, (), {}), "buffer")
        rec.call(addmm, (), {})
        records = rec.drain()
        names = [r for r in records if r["t"] == "op"]
        self.assertEqual([(r["id"], r["name"]) for r in names],
                         [(1, "aten::empty"), (2, "aten::addmm")])
        (batch,) = [r for r in records if r["t"] == "op_scopes"]
        s = batch["s"]
        groups = [s[i:i + 4] for i in range(0, len(s), 4)]
        # empty (depth 1) ends first, inside addmm (depth 0).
        self.assertEqual([(g[2], g[3]) for g in groups], [(1, 1), (2, 0), (1, 1), (2, 0)])
        starts = [batch["base_ns"] + g[0] for g in groups]
        self.assertLess(starts[1], starts[0])
        self.assertTrue(all(g[1] >= 0 for g in groups))
        self.assertEqual(rec.drain(), [])

    def test_an_ops_own_exception_passes_and_its_scope_is_kept(self):
        rec = ops.OpRecorder(clock=Clock())

        def boom():
            raise ValueError("op failed")
        with self.assertRaises(ValueError):
            rec.call(FakeOp("aten::bad", boom), (), {})
        self.assertEqual(rec.scopes, 1)
        self.assertEqual(rec.call(FakeOp("aten::ok", lambda: 3), (), {}), 3)

    def test_a_name_that_cannot_be_read_never_breaks_the_op(self):
        class Weird:
            @property
            def _schema(self):
                raise RuntimeError("no schema")

            def __call__(self):
                return 5
        rec = ops.OpRecorder(clock=Clock())
        self.assertEqual(rec.call(Weird(), (), {}), 5)
        names = [r for r in rec.drain() if r["t"] == "op"]
        self.assertEqual(len(names), 1)  # named by str(func)

    def test_batches_are_bounded_and_a_fork_starts_over(self):
        rec = ops.OpRecorder(clock=Clock())
        op = FakeOp("aten::mm")
        for _ in range(ops.BATCH + 5):
            rec.call(op, (), {})
        batches = [r for r in rec.drain() if r["t"] == "op_scopes"]
        self.assertEqual([len(b["s"]) // 4 for b in batches], [ops.BATCH, 5])
        rec.after_fork()
        rec.call(op, (), {})
        self.assertEqual([r["t"] for r in rec.drain()], ["op", "op_scopes"])


class ConfigTest(unittest.TestCase):
    base = {"MEMSCOPE_OUTPUT_DIR": "/tmp/x"}

    def test_modes_and_a_bad_value(self):
        self.assertEqual(config.Config.from_env(self.base).ops, "auto")
        for mode in ("auto", "dispatch", "frames", "off"):
            self.assertEqual(config.Config.from_env(dict(self.base, MEMSCOPE_OPS=mode)).ops, mode)
        cfg = config.Config.from_env(dict(self.base, MEMSCOPE_OPS="yes"))
        self.assertEqual(cfg.ops, "auto")
        self.assertTrue(any("MEMSCOPE_OPS" in w for w in cfg.warnings))
        self.assertEqual(config.check_variable("MEMSCOPE_OPS", "dispatch"), "dispatch")
        self.assertIsNone(config.check_variable("MEMSCOPE_OPS", "Dispatch"))

    def test_auto_says_why_ops_were_not_recorded(self):
        self.assertTrue(ops.describe_auto(True, True).startswith("recorded"))
        why = ops.describe_auto(False, False)
        self.assertTrue(why.startswith("not recorded"))
        self.assertIn("--ops dispatch", why)
        # A library without the entry point (an older build) records none.
        self.assertEqual(capture.record_ops(None), (False, None))

        class Lib:
            pass
        recorded, reason = capture.record_ops(capture.Capture(Lib(), None, print))
        self.assertFalse(recorded)
        self.assertIn("predates", reason)


class DispatchTest(unittest.TestCase):
    def test_the_mode_records_real_ops(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch")
        import subprocess
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import torch\n"
                "from memscope_hook import ops\n"
                "rec = ops.OpRecorder()\n"
                "print(ops.install_dispatch(torch, rec))\n"
                "y = torch.softmax(torch.nn.Linear(3, 4)(torch.randn(2, 3)), dim=1)\n"
                "y.sum().backward()\n"
                "print(sorted({r['name'] for r in rec.drain() if r['t'] == 'op'}))\n" % HOOK)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        first, names = p.stdout.splitlines()[:2]
        self.assertTrue(first.startswith("recorded"), first)
        self.assertIn("aten::addmm", names)
        self.assertIn("aten::_softmax", names)
        del torch


if __name__ == "__main__":
    unittest.main()
