#!/usr/bin/env python3
"""record --apply's plan in the hook (profiler/pyhook/memscope_hook/apply.py):
reading it (bad JSON, another format, hostile values refused before anything
is applied), the outcome hook.json reports (applied, refused once, unused),
and MEMSCOPE_APPLY in config.py. No torch needed.

usage: test_apply.py      (ctest: memscope_pyhook_apply_unit)
"""
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_HOOK = os.path.normpath(os.path.join(HERE, "..", "..", "profiler", "pyhook"))
HOOK = os.environ.get("MEMSCOPE_PYHOOK_DIR") or SOURCE_HOOK
sys.path.insert(0, HOOK)

from memscope_hook import apply, config, modules  # noqa: E402


class FakeModule:
    """What modules.py asks of a module: named_modules()."""

    def __init__(self, children=()):
        self.children = list(children)

    def named_modules(self):
        yield "", self
        for i, c in enumerate(self.children):
            for name, m in c.named_modules():
                yield (str(i) + ("." + name if name else "")), m


class Net(FakeModule):
    pass


def plan(**over):
    doc = {"format": "memscope-apply/1", "policy": "layers:1-2", "use_reentrant": False,
           "optimizer_in_backward": False,
           "checkpoint": [{"root": "Net", "path": "blocks.1", "type": "Block", "save": []},
                          {"root": "Net", "path": "blocks.2", "type": "Block",
                           "save": ["aten::mm", "aten::addmm"]}],
           "sequential": None}
    doc.update(over)
    return json.dumps(doc)


class ReadingThePlan(unittest.TestCase):
    def test_a_plan_as_record_writes_it(self):
        p = apply.parse_plan(plan())
        self.assertEqual(p.policy, "layers:1-2")
        self.assertFalse(p.use_reentrant)
        self.assertEqual([m.name() for m in p.checkpoint], ["Net:blocks.1", "Net:blocks.2"])
        self.assertEqual(p.checkpoint[1].save, ("aten::mm", "aten::addmm"))
        self.assertEqual(p.roots(), {"Net"})
        seq = apply.parse_plan(plan(checkpoint=[], use_reentrant=True, sequential={
            "root": "Net", "path": "body", "type": "Sequential", "segments": 2}))
        self.assertEqual((seq.sequential.name(), seq.segments), ("Net:body", 2))
        opt = apply.parse_plan(plan(checkpoint=[], policy="opt-in-bwd",
                                    optimizer_in_backward=True))
        self.assertTrue(opt.optimizer_in_backward)

    def test_bad_documents_are_refused_with_what_is_wrong(self):
        cases = {
            "not valid JSON": "{",
            "not a JSON object": "[1]",
            "format": plan(format="memscope-apply/2"),
            "\"policy\" is not a string": plan(policy=3),
            "\"policy\" is empty": plan(policy=""),
            "not true or false": plan(use_reentrant="no"),
            "\"checkpoint\" is not a list": plan(checkpoint={"a": 1}),
            "checkpoint[0] is not an object": plan(checkpoint=[7]),
            "\"path\" is not a string": plan(checkpoint=[{"root": "Net", "path": None}]),
            "not a module's qualified name": plan(checkpoint=[{"root": "N", "path": "a..b",
                                                               "type": ""}]),
            "named twice": plan(checkpoint=[{"root": "N", "path": "a", "type": ""}] * 2),
            "not an op": plan(checkpoint=[{"root": "N", "path": "a", "type": "",
                                           "save": ["os.system('x')"]}]),
            "\"save\" is not a list": plan(checkpoint=[{"root": "N", "path": "a", "type": "",
                                                        "save": "aten::mm"}]),
            "segments": plan(checkpoint=[], sequential={"root": "N", "path": "b", "type": "",
                                                        "segments": 0}),
            "segments\" is not a number": plan(checkpoint=[], sequential={
                "root": "N", "path": "b", "type": "", "segments": True}),
            "applies nothing": plan(checkpoint=[]),
            "longer than": plan(checkpoint=[{"root": "N", "path": "a" * 5000, "type": ""}]),
            "checkpointed on their own too": plan(sequential={
                "root": "Net", "path": "blocks", "type": "", "segments": 2}),
        }
        for what, text in cases.items():
            with self.subTest(what=what):
                with self.assertRaises(apply.PlanError) as e:
                    apply.parse_plan(text)
                self.assertIn(what, str(e.exception))

    def test_deeply_nested_or_huge_input_is_an_error_not_a_crash(self):
        with self.assertRaises(apply.PlanError):
            apply.parse_plan("[" * 100000 + "]" * 100000)
        with self.assertRaises(apply.PlanError):
            apply.parse_plan(plan(checkpoint=[{"root": "N", "path": "m%d" % i, "type": ""}
                                              for i in range(apply.MAX_MODULES + 1)]))

    def test_the_file_is_read_safely(self):
        d = tempfile.mkdtemp(prefix="memscope-apply-")
        self.addCleanup(shutil.rmtree, d)
        good = os.path.join(d, "apply-plan.json")
        with open(good, "w") as f:
            f.write(plan())
        self.assertEqual(apply.read_plan(good).policy, "layers:1-2")
        link = os.path.join(d, "link.json")
        os.symlink(good, link)
        with self.assertRaises(apply.PlanError):
            apply.read_plan(link)               # never through a symlink
        with self.assertRaises(apply.PlanError):
            apply.read_plan(d)                  # a folder
        with self.assertRaises(apply.PlanError):
            apply.read_plan(os.path.join(d, "missing.json"))
        big = os.path.join(d, "big.json")
        with open(big, "w") as f:
            f.write(" " * (apply.MAX_PLAN_BYTES + 1))
        with self.assertRaises(apply.PlanError) as e:
            apply.read_plan(big)
        self.assertIn("larger than", str(e.exception))
        binary = os.path.join(d, "bin.json")
        with open(binary, "wb") as f:
            f.write(b"\xff\xfe")
        with self.assertRaises(apply.PlanError):
            apply.read_plan(binary)


class TheOutcome(unittest.TestCase):
    def test_a_bad_plan_is_refused_at_once_and_said_once(self):
        err = io.StringIO()
        out = apply.install(None, "/nonexistent/apply-plan.json", None, None, stream=err)
        doc = out.document()
        self.assertFalse(doc["applied"])
        self.assertIn("cannot open", doc["refused"])
        out.refuse("again")
        self.assertEqual(err.getvalue().count("refused"), 1)
        self.assertTrue(err.getvalue().startswith("memscope: --apply ? refused: the apply plan"))

    def test_applied_only_when_every_part_was_put_in_place(self):
        out = apply.Outcome("layers:1+opt-in-bwd", stream=io.StringIO())
        out.wanted += ["checkpoint", "optimizer"]
        self.assertFalse(out.applied())
        self.assertIn("no training forward", out.document()["unused"])
        out.checkpointed.append("Net:blocks.1")
        self.assertFalse(out.applied())
        self.assertIn("no torch.optim optimizer", out.document()["unused"])
        out.optimizer = "AccumulateGrad node hooks"
        self.assertTrue(out.document()["applied"])
        self.assertIsNone(out.document()["unused"])

    def test_a_refusal_undoes_what_was_put_in_place_and_is_never_applied(self):
        undone = []
        out = apply.Outcome("layers:1", stream=io.StringIO())
        out.wanted.append("checkpoint")
        out.checkpointed.append("Net:blocks.1")
        out.add_undo(lambda: undone.append("first"))
        out.add_undo(lambda: undone.append("second"))
        out.refuse("Net has no module blocks.9")
        self.assertEqual(undone, ["second", "first"])
        doc = out.document()
        self.assertFalse(doc["applied"])
        self.assertEqual(doc["refused"], "Net has no module blocks.9")
        json.dumps(doc)   # what hook.json writes

    def test_a_forked_child_says_nothing(self):
        out = apply.Outcome("opt-in-bwd")
        out.child = True
        self.assertIsNone(out.document())


class RootsAsModulesLabelsThem(unittest.TestCase):
    def test_each_new_root_is_handed_over_once_with_its_label(self):
        seen = []
        rec = modules.ModuleRecorder(depth=4, clock=lambda: 1)
        rec.on_new_root = lambda module, label: seen.append((module, label))
        child = FakeModule()
        a, b = Net([child]), Net()
        rec.pre(a)
        rec.pre(child)
        rec.post(child)
        rec.post(a)
        rec.pre(a)          # a root seen before: not handed over again
        rec.post(a)
        rec.pre(child)      # a part of a known root called alone (a recompute)
        rec.post(child)
        rec.pre(b)          # a second Net alive at once: "Net#2", as the trace records it
        rec.post(b)
        self.assertEqual(seen, [(a, "Net"), (b, "Net#2")])

    def test_a_failing_callback_does_not_stop_the_recording(self):
        rec = modules.ModuleRecorder(depth=4, clock=lambda: 1)
        rec.on_new_root = lambda module, label: 1 / 0
        a = Net()
        rec.pre(a)
        rec.post(a)
        self.assertEqual(rec.modules, 1)


class TheVariable(unittest.TestCase):
    def test_an_absolute_path_is_taken_anything_else_refused(self):
        base = {"MEMSCOPE_OUTPUT_DIR": "/tmp/x"}
        cfg = config.Config.from_env(dict(base, MEMSCOPE_APPLY="/tmp/x/apply-plan.json"))
        self.assertEqual(cfg.apply_plan, "/tmp/x/apply-plan.json")
        self.assertIsNone(cfg.apply_problem)
        cfg = config.Config.from_env(dict(base, MEMSCOPE_APPLY="plan.json"))
        self.assertIsNone(cfg.apply_plan)
        # Refused visibly by apply.py, not a plain run with a warning alone.
        self.assertIn("not an absolute path", cfg.apply_problem)
        cfg = config.Config.from_env(base)
        self.assertIsNone(cfg.apply_plan)
        self.assertIsNone(cfg.apply_problem)


if __name__ == "__main__":
    unittest.main()
