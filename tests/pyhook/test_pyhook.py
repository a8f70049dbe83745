#!/usr/bin/env python3
"""Tests of memscope's Python startup hook (profiler/pyhook).

usage: test_pyhook.py CASE      (ctest runs one case per test; see CMakeLists.txt)

The training scripts in scripts/ are plain PyTorch; they run as child
processes of the interpreter that has torch (MEMSCOPE_PYHOOK_TEST_PYTHON),
with the hook folder on PYTHONPATH as `memscope-cli record` sets it. Exit
code 77 = skipped (no torch), with the reason printed.
"""
import glob
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # keep the staged hook folder clean

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
SOURCE_HOOK = os.path.normpath(os.path.join(HERE, "..", "..", "profiler", "pyhook"))
HOOK = os.environ.get("MEMSCOPE_PYHOOK_DIR") or SOURCE_HOOK
PY = os.environ.get("MEMSCOPE_PYHOOK_TEST_PYTHON") or sys.executable
SKIP = 77
PROFILER_MESSAGE = ("memscope: torch.profiler started; it takes CUPTI over, so the CUPTI trace "
                    "stops receiving records from here on (the allocator history is unaffected)")


# The environment a launcher gives its ranks: kept out of the tests' children.
LAUNCHER_VARIABLES = ("PYTHONPATH", "RANK", "LOCAL_RANK", "SLURM_PROCID", "SLURM_LOCALID",
                      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK",
                      "MPI_LOCALRANKID")


def base_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMSCOPE_") and k not in LAUNCHER_VARIABLES}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # keep the staged folder clean
    return env


def hook_env(out, **extra):
    env = base_env()
    env.update(PYTHONPATH=HOOK, MEMSCOPE_HOOK="1", MEMSCOPE_OUTPUT_DIR=out)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(args, env, timeout=150):
    proc = subprocess.run([PY] + args, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError("%s failed (%d)\nstdout:\n%s\nstderr:\n%s"
                             % (args, proc.returncode, proc.stdout, proc.stderr))
    return proc


def script(name):
    return os.path.join(SCRIPTS, name)


def hook_dirs(out):
    return sorted(glob.glob(os.path.join(out, ".memscope-hook", "*")))


def read_log(d):
    """log.jsonl's records in sequence order (a damaged last line fails)."""
    path = os.path.join(d, "log.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        records = [json.loads(line) for line in f]
    return sorted({r["seq"]: r for r in records}.values(), key=lambda r: r["seq"])


def logged_phases(records, open_phases=()):
    """The phases as the C++ reader resolves them, without its rule for what
    follows the last step (tested through memscope-cli): a step record
    replaces those with the same or a higher number; an inner phase takes the
    number of the step that holds it (-1: none)."""
    steps, inner = {}, []
    for r in [r for r in records if r.get("t") == "phase"] + list(open_phases):
        if r["kind"] == "step":
            for n in [n for n in steps if n >= r["step"]]:
                del steps[n]
            steps[r["step"]] = r
        else:
            inner.append(r)
    out = []
    for r in steps.values():
        out.append(dict(kind="step", step=r["step"], start_ns=r["start_ns"], end_ns=r["end_ns"]))
    for r in inner:
        holder = [s for s in steps.values()
                  if s["start_ns"] <= r["start_ns"] and r["end_ns"] <= s["end_ns"]]
        out.append(dict(kind=r["kind"], step=holder[0]["step"] if holder else -1,
                        start_ns=r["start_ns"], end_ns=r["end_ns"]))
    rank = {"step": 0}
    out.sort(key=lambda p: (p["start_ns"], -p["end_ns"], rank.get(p["kind"], 1)))
    return out


def load_single(out):
    """The one process folder and its hook.json, with "phases" resolved from
    the log and the phases open at exit."""
    dirs = hook_dirs(out)
    if len(dirs) != 1:
        raise AssertionError("expected one process folder, found %s" % dirs)
    with open(os.path.join(dirs[0], "hook.json")) as f:
        doc = json.load(f)
    doc["records"] = read_log(dirs[0])
    doc["phases"] = logged_phases(doc["records"], doc.get("open_phases", ()))
    return dirs[0], doc


def module_scopes(doc):
    """The log's modules (by id) and scopes as (start, end, module record,
    kind), hook.json's open scopes included."""
    mods = {r["id"]: r for r in doc["records"] if r.get("t") == "module"}
    scopes = []
    for r in doc["records"]:
        if r.get("t") == "module_scopes":
            s = r["s"]
            for i in range(0, len(s), 4):
                start = r["base_ns"] + s[i]
                scopes.append((start, start + s[i + 1], mods[s[i + 2]], s[i + 3]))
    for start, end, m, kind in doc.get("open_module_scopes", ()):
        scopes.append((start, end, mods[m], kind))
    return mods, sorted(scopes, key=lambda s: (s[0], -s[1]))


def scope_paths(scopes, kind=None):
    """path -> number of scopes (of `kind`: 0 forward, 1 recompute)."""
    out = {}
    for _, _, m, k in scopes:
        if kind is None or k == kind:
            key = m["path"] if m["root"] in ("Net", "Sequential") else m["root"] + "/" + m["path"]
            out[key] = out.get(key, 0) + 1
    return out


def torch_version():
    proc = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"], env=base_env(),
                          capture_output=True, text=True, timeout=120)
    return proc.stdout.strip() if proc.returncode == 0 else None


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="memscope-pyhook-")
        self.out = os.path.join(self.tmp, "out")
        os.makedirs(self.out)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------ assertions
    def assert_schema(self, doc, exit_reason="atexit", complete=True):
        for key in ("format", "version", "pid", "rank", "local_rank", "python", "torch", "clock",
                    "argv", "started_ns", "ended_ns", "complete", "exit", "hooks", "log",
                    "open_phases", "capture", "histories", "history", "cpu_events", "profiler",
                    "warnings", "modules", "open_module_scopes"):
            self.assertIn(key, doc)
        self.assertEqual(doc["format"], "memscope-hook")
        self.assertEqual(doc["version"], 2)
        self.assertEqual(doc["log"], "log.jsonl")
        self.assertEqual(doc["clock"], "CLOCK_REALTIME ns")
        self.assertEqual(doc["exit"], exit_reason)
        self.assertIs(doc["complete"], complete)
        self.assertEqual(sorted(doc["hooks"]),
                         ["backward", "compile", "forward", "module_backward", "modules", "ops",
                          "optimizer", "recompute", "tensor_roles", "zero_grad"])
        for name, what in doc["hooks"].items():
            # Module backward hooks and torch.compile are PyTorch 2.0+.
            if name not in ("module_backward", "compile"):
                self.assertFalse(what.startswith("unavailable"), "%s: %s" % (name, what))
        self.assertEqual(sorted(doc["history"]),
                         ["api", "enabled", "max_entries", "oom_observer", "reason", "ring"])
        self.assertLessEqual(doc["started_ns"], doc["ended_ns"])

    def assert_well_formed(self, doc, trailing_ok=False):
        """Ordered by start, every phase closed, properly nested, phases
        inside the step they name, steps disjoint and numbered from 0.
        trailing_ok: a process killed at a random moment may have begun a step
        that holds no backward or optimizer yet; its zero_grad and forward are
        logged without a step record (the reader places them). Those, and only
        those, may follow the last step."""
        phases = doc["phases"]
        if trailing_ok:
            last_end = max((p["end_ns"] for p in phases if p["kind"] == "step"), default=0)
            trailing = [p for p in phases if p["step"] == -1]
            for p in trailing:
                self.assertIn(p["kind"], ("zero_grad", "forward"), "stepless %s" % p)
                self.assertGreaterEqual(p["start_ns"], last_end, "stepless %s before a step" % p)
            phases = [p for p in phases if p["step"] != -1]
        starts = [p["start_ns"] for p in phases]
        self.assertEqual(starts, sorted(starts), "phases not ordered by start_ns")
        for p in phases:
            self.assertIn(p["kind"], ("step", "forward", "backward", "recompute", "optimizer",
                                      "zero_grad"))
            self.assertLessEqual(p["start_ns"], p["end_ns"])
            self.assertGreaterEqual(p["start_ns"], doc["started_ns"])
            self.assertLessEqual(p["end_ns"], doc["ended_ns"])
        for i, a in enumerate(phases):
            for b in phases[i + 1:]:
                disjoint = a["end_ns"] <= b["start_ns"] or b["end_ns"] <= a["start_ns"]
                nested = ((a["start_ns"] <= b["start_ns"] and b["end_ns"] <= a["end_ns"])
                          or (b["start_ns"] <= a["start_ns"] and a["end_ns"] <= b["end_ns"]))
                self.assertTrue(disjoint or nested, "phases overlap: %s %s" % (a, b))
        steps = [p for p in phases if p["kind"] == "step"]
        self.assertEqual([s["step"] for s in steps], list(range(len(steps))))
        by_index = {s["step"]: s for s in steps}
        for p in phases:
            s = by_index[p["step"]]
            self.assertTrue(s["start_ns"] <= p["start_ns"] and p["end_ns"] <= s["end_ns"],
                            "%s outside its step %s" % (p, s))
        return steps

    def of(self, doc, step, kind):
        return [p for p in doc["phases"] if p["step"] == step and p["kind"] == kind]

    @staticmethod
    def inside(inner, outer):
        return outer["start_ns"] <= inner["start_ns"] and inner["end_ns"] <= outer["end_ns"]

    def assert_training_steps(self, doc, steps, recomputes_per_step):
        self.assertEqual(len(self.assert_well_formed(doc)), steps)
        for k in range(steps):
            step = self.of(doc, k, "step")[0]
            zero_grad = self.of(doc, k, "zero_grad")
            forward = self.of(doc, k, "forward")
            backward = self.of(doc, k, "backward")
            recompute = self.of(doc, k, "recompute")
            optimizer = self.of(doc, k, "optimizer")
            self.assertEqual((len(zero_grad), len(forward), len(backward), len(optimizer)),
                             (1, 1, 1, 1), "step %d: %s" % (k, doc["phases"]))
            self.assertEqual(len(recompute), recomputes_per_step, "step %d" % k)
            zero_grad, forward, backward, optimizer = zero_grad[0], forward[0], backward[0], optimizer[0]
            # opt.zero_grad() opens the step; then forward, backward, step.
            self.assertEqual(zero_grad["start_ns"], step["start_ns"])
            self.assertLessEqual(zero_grad["end_ns"], forward["start_ns"])
            self.assertLessEqual(forward["end_ns"], backward["start_ns"])
            self.assertLessEqual(backward["end_ns"], optimizer["start_ns"])
            self.assertEqual(optimizer["end_ns"], step["end_ns"])
            for r in recompute:
                self.assertTrue(self.inside(r, backward), "recompute %s not in backward %s" % (r, backward))


# ======================================================================= cases
class RecorderUnit(unittest.TestCase):
    """The phase state machine alone, with a fake clock (no torch)."""

    def setUp(self):
        sys.path.insert(0, HOOK)
        from memscope_hook import phases
        self.phases = phases
        self.t = 0
        self.opened, self.closed = [], []

        def clock():
            self.t += 10
            return self.t
        self.rec = phases.Recorder(clock=clock, on_step_opened=self.opened.append,
                                   on_step_closed=self.closed.append)

    def kinds(self):
        return [(p["kind"], p["step"]) for p in self.rec.snapshot()]

    def forward(self, depth=2):
        for _ in range(depth):
            self.rec.module_pre()
        for _ in range(depth):
            self.rec.module_post()

    def test_rank_from_each_launcher(self):
        from memscope_hook import config
        base = {"MEMSCOPE_OUTPUT_DIR": "/tmp/x"}
        cases = [({}, (-1, -1)),
                 ({"RANK": "3", "LOCAL_RANK": "1"}, (3, 1)),                  # torchrun
                 ({"SLURM_PROCID": "17", "SLURM_LOCALID": "5"}, (17, 5)),     # srun
                 ({"RANK": "2", "SLURM_PROCID": "9"}, (2, -1)),               # torchrun under srun
                 ({"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}, (4, 0)),
                 ({"PMI_RANK": "6", "MPI_LOCALRANKID": "2"}, (6, 2)),
                 ({"RANK": "x", "SLURM_PROCID": "8"}, (8, -1))]               # unparsable: next
        for extra, want in cases:
            cfg = config.Config.from_env(dict(base, **extra))
            self.assertEqual((cfg.rank, cfg.local_rank), want, extra)

    def test_rank_out_of_range_is_refused_not_narrowed(self):
        # Issue 64, class 5: 4294967301 was written as rank 5 by the merge.
        from memscope_hook import config
        base = {"MEMSCOPE_OUTPUT_DIR": "/tmp/x"}
        for extra, want, warns in [({"RANK": "4294967301", "LOCAL_RANK": "1"}, (-1, 1), True),
                                   ({"RANK": "-3", "SLURM_PROCID": "8"}, (-1, -1), True),
                                   ({"RANK": "2", "LOCAL_RANK": "2147483648"}, (2, -1), True),
                                   ({"RANK": "2147483647"}, (2147483647, -1), False)]:
            cfg = config.Config.from_env(dict(base, **extra))
            self.assertEqual((cfg.rank, cfg.local_rank), want, extra)
            self.assertEqual(any("is not a rank" in w for w in cfg.warnings), warns, cfg.warnings)

    def test_regular_loop_and_accumulation(self):
        opt = object()
        for _ in range(2):
            self.rec.zero_grad_begin(); self.rec.zero_grad_end()
            for _ in range(2):  # two micro-batches: one step
                self.forward()
                self.assertTrue(self.rec.backward_begin()); self.rec.backward_end()
            self.rec.optimizer_begin(opt); self.rec.optimizer_end(opt)
        # Before the first optimizer step, a forward after a backward looked
        # like a new step (no optimizer yet): the optimizer step merged it.
        self.assertEqual(self.opened, [0, 1, 1])
        self.assertEqual(self.closed, [0, 0, 1])
        self.assertEqual(self.kinds()[:7], [("step", 0), ("zero_grad", 0), ("forward", 0),
                                            ("backward", 0), ("forward", 0), ("backward", 0),
                                            ("optimizer", 0)])
        self.assertEqual([k for k in self.kinds() if k[0] == "step"], [("step", 0), ("step", 1)])

    def steps(self):
        return [p for p in self.rec.snapshot() if p["kind"] == "step"]

    def test_trailing_zero_grad_opens_no_step(self):
        opt = object()
        for _ in range(3):
            self.forward()
            self.rec.backward_begin(); self.rec.backward_end()
            self.rec.optimizer_begin(opt); self.rec.optimizer_end(opt)
            self.rec.zero_grad_begin(); self.rec.zero_grad_end()
        self.assertEqual([s["step"] for s in self.steps()], [0, 1, 2])
        # The zero_grad after step k's optimizer is logged with step k + 1.
        zero_grads = [p for p in self.rec.snapshot() if p["kind"] == "zero_grad"]
        self.assertEqual(len(zero_grads), 3)
        self.assertGreater(zero_grads[-1]["start_ns"], self.steps()[-1]["end_ns"])

    def test_two_optimizers_on_other_parameters_are_one_step(self):
        params = {}
        rec = self.phases.Recorder(clock=lambda: self.tick(), params_of=lambda o: params[o])
        d, g = "D", "G"
        params[d], params[g] = frozenset([1, 2]), frozenset([3, 4])
        for _ in range(3):
            for o in (d, g):
                rec.zero_grad_begin(); rec.zero_grad_end()
                rec.module_pre(); rec.module_post()
                rec.backward_begin(); rec.backward_end()
                rec.optimizer_begin(o); rec.optimizer_end(o)
        steps = [p for p in rec.snapshot() if p["kind"] == "step"]
        self.assertEqual([s["step"] for s in steps], [0, 1, 2])
        self.assertTrue(rec.joined)
        per_step = [sum(1 for p in rec.snapshot() if p["kind"] == "optimizer"
                        and s["start_ns"] <= p["start_ns"] and p["end_ns"] <= s["end_ns"])
                    for s in steps]
        self.assertEqual(per_step, [2, 2, 2])

    def test_a_new_optimizer_over_the_same_parameters_is_a_new_step(self):
        rec = self.phases.Recorder(clock=lambda: self.tick(),
                                   params_of=lambda o: frozenset([1, 2]))
        for o in ("epoch 0 optimizer", "epoch 1 optimizer"):
            rec.module_pre(); rec.module_post()
            rec.backward_begin(); rec.backward_end()
            rec.optimizer_begin(o); rec.optimizer_end(o)
        self.assertEqual([p["step"] for p in rec.snapshot() if p["kind"] == "step"], [0, 1])
        self.assertFalse(rec.joined)

    def test_without_optimizer_forwards_after_backwards_split_steps(self):
        for _ in range(3):
            self.forward()
            self.rec.backward_begin(); self.rec.backward_end()
        self.assertEqual([s["step"] for s in self.steps()], [0, 1, 2])

    def test_evaluation_after_training_is_no_step(self):
        opt = object()
        self.forward()
        self.rec.backward_begin(); self.rec.backward_end()
        self.rec.optimizer_begin(opt); self.rec.optimizer_end(opt)
        for _ in range(3):
            self.forward()
        self.assertEqual(len(self.steps()), 1)
        forwards = [p for p in self.rec.snapshot() if p["kind"] == "forward"]
        self.assertEqual([p["step"] for p in forwards], [0, -1])  # the evaluation is in none

    def test_log_records_are_sequenced_and_drained_once(self):
        opt = object()
        self.forward()
        self.rec.backward_begin(); self.rec.backward_end()
        self.rec.note({"t": "oom", "time_ns": 1})
        self.rec.optimizer_begin(opt); self.rec.optimizer_end(opt)
        first = self.rec.drain()
        self.assertEqual([r["seq"] for r in first], list(range(1, len(first) + 1)))
        self.assertEqual([r.get("kind", r["t"]) for r in first],
                         ["forward", "backward", "oom", "optimizer", "step"])
        self.assertEqual(self.rec.drain(), [])

    def tick(self):
        self.t += 10
        return self.t

    def test_optimizer_in_backward_defers_step_end(self):
        opts = [object(), object()]
        for _ in range(2):
            self.forward()
            self.rec.backward_begin()
            for o in opts:
                self.rec.optimizer_begin(o); self.rec.zero_grad_begin(); self.rec.zero_grad_end()
                self.rec.optimizer_end(o)
            self.rec.backward_end()
        self.assertEqual(self.closed, [0])  # step 0 closed when step 1's forward began
        snap = self.rec.snapshot()
        step0 = [p for p in snap if p["kind"] == "step" and p["step"] == 0][0]
        bwd0 = [p for p in snap if p["kind"] == "backward" and p["step"] == 0][0]
        self.assertEqual(step0["end_ns"], bwd0["end_ns"])
        self.assertEqual(sum(1 for p in snap if p["kind"] == "step"), 2)

    def test_reentrant_checkpoint_sequence(self):
        self.forward()
        self.rec.backward_begin()
        opened = self.rec.checkpoint_begin()
        self.assertTrue(opened)
        self.forward()                    # recomputed block: no new forward/step
        self.rec.backward_begin()         # differentiating it: recompute over
        self.rec.backward_end()
        self.rec.checkpoint_end(opened)
        self.rec.backward_end()
        kinds = self.kinds()
        self.assertEqual(kinds, [("step", 0), ("forward", 0), ("backward", 0), ("recompute", 0)])
        self.assertEqual(self.rec.snapshot()[3]["end_ns"] < self.rec.snapshot()[2]["end_ns"], True)

    def test_lbfgs_closure_and_raising_forward(self):
        opt = object()
        self.rec.module_pre()             # a forward that raises: no post hook
        self.rec.backward_begin(); self.rec.backward_end()   # depth reset here
        self.rec.optimizer_begin(opt)     # LBFGS: closure runs forward+backward
        self.forward()
        self.rec.backward_begin(); self.rec.backward_end()
        self.rec.optimizer_end(opt)
        self.forward()
        self.assertEqual(self.closed, [0])
        # The forward after the step opens one only once it trains.
        self.assertEqual([k for k in self.kinds() if k[0] == "step"], [("step", 0)])
        self.rec.backward_begin(); self.rec.backward_end()
        self.assertEqual([k for k in self.kinds() if k[0] == "step"], [("step", 0), ("step", 1)])

    def test_grad_inside_forward_is_forward(self):
        self.rec.module_pre()
        self.assertFalse(self.rec.backward_begin(is_grad=True))
        self.rec.module_post()
        self.assertEqual(self.kinds(), [("step", 0), ("forward", 0)])

    def test_snapshot_does_not_close(self):
        self.forward()
        self.rec.snapshot()
        self.rec.backward_begin(); self.rec.backward_end()
        self.assertEqual(self.kinds(), [("step", 0), ("forward", 0), ("backward", 0)])


class Training(Base):
    def assert_block_scopes(self, doc, steps):
        """train_checkpoint.py: every module once a step, blocks 1 and 3
        (checkpointed) recomputed once a step with their children, each
        recompute scope inside a recompute phase."""
        mods, scopes = module_scopes(doc)
        self.assertEqual(len(mods), len({(m["root"], m["path"]) for m in mods.values()}),
                         "a module defined twice")
        forward = scope_paths(scopes, 0)
        for path in ("", "stem", "head", "blocks.0", "blocks.0.fc1", "blocks.0.act",
                     "blocks.3.fc2"):
            self.assertEqual(forward.get(path), steps, (path, forward))
        recompute = scope_paths(scopes, 1)
        self.assertEqual(recompute, {p: steps for p in ("blocks.1", "blocks.1.fc1", "blocks.1.act",
                                                       "blocks.1.fc2", "blocks.3", "blocks.3.fc1",
                                                       "blocks.3.act", "blocks.3.fc2")})
        phases = [p for p in doc["phases"] if p["kind"] == "recompute"]
        for start, end, m, kind in scopes:
            if kind == 1:
                self.assertTrue(any(self.inside({"start_ns": start, "end_ns": end}, p)
                                    for p in phases), (m["path"], start, end))
        self.assertEqual(doc["modules"]["depth"], 6)
        self.assertTrue(doc["hooks"]["module_backward"].startswith(("unavailable", "off")))

    def test_training_reentrant(self):
        run([script("train_checkpoint.py"), "3", "1"], hook_env(self.out))
        _, doc = load_single(self.out)
        self.assert_schema(doc)
        self.assertIn("CheckpointFunction", doc["hooks"]["recompute"])
        self.assert_training_steps(doc, 3, recomputes_per_step=2)
        self.assert_block_scopes(doc, 3)
        self.assertEqual(doc["histories"], [])
        self.assertFalse(doc["history"]["enabled"])
        self.assertIsNone(doc["cpu_events"])
        self.assertEqual(doc["warnings"], [])
        # Tensor roles with the real PyTorch (tensor_roles.py's own tests use fakes).
        roles = {}
        for r in doc["records"]:
            if r["t"] == "tensor_roles":
                roles[r["role"]] = roles.get(r["role"], 0) + len(r["s"]) // 3
        self.assertEqual(sorted(roles), ["gradient", "input", "optimizer_state", "parameter"])
        # Every gradient at each of the 3 optimizer steps, and after the first
        # backward (no optimizer had stepped yet); Adam's 3 state tensors per
        # parameter once (unchanged after); the parameters once; one input a step.
        n = roles["parameter"]
        self.assertEqual(roles, {"parameter": n, "gradient": 4 * n, "optimizer_state": 3 * n,
                                 "input": 3})
        self.assertNotIn("off", doc["hooks"]["tensor_roles"])

    def test_training_nonreentrant(self):
        run([script("train_checkpoint.py"), "3", "0"], hook_env(self.out))
        _, doc = load_single(self.out)
        self.assert_schema(doc)
        self.assert_training_steps(doc, 3, recomputes_per_step=2)
        self.assert_block_scopes(doc, 3)

    def test_module_shapes(self):
        run([script("modules.py"), "gan", "3"], hook_env(self.out))
        _, doc = load_single(self.out)
        mods, scopes = module_scopes(doc)
        self.assertEqual(sorted({m["root"] for m in mods.values()}),
                         ["Discriminator", "Discriminator#2", "Generator"])
        forward = scope_paths(scopes, 0)
        # Per step: G once; each D on real and fake, then on fake for G's loss.
        self.assertEqual(forward["Generator/"], 3)
        self.assertEqual(forward["Generator/main.0"], 3)
        self.assertEqual(forward["Discriminator/main"], 9)
        self.assertEqual(forward["Discriminator#2/main.2"], 9)

    def test_module_depth(self):
        run([script("train_checkpoint.py"), "2", "1"], hook_env(self.out, MEMSCOPE_MODULE_DEPTH=2))
        _, doc = load_single(self.out)
        _, scopes = module_scopes(doc)
        self.assertEqual(sorted(scope_paths(scopes)),
                         ["", "blocks.0", "blocks.1", "blocks.2", "blocks.3", "head", "stem"])
        self.assertEqual(scope_paths(scopes, 1), {"blocks.1": 2, "blocks.3": 2})
        shutil.rmtree(self.out)
        run([script("train_checkpoint.py"), "2", "1"], hook_env(self.out, MEMSCOPE_MODULE_DEPTH=0))
        _, doc = load_single(self.out)
        self.assertEqual(module_scopes(doc), ({}, []))
        self.assertTrue(doc["hooks"]["modules"].startswith("off"), doc["hooks"]["modules"])
        self.assert_training_steps(doc, 2, recomputes_per_step=2)  # the phases are unchanged

    def test_module_fork(self):
        proc = run([script("modules.py"), "fork"], hook_env(self.out))
        child = int(proc.stdout.split("child ")[1].split()[0])
        self.assertIn("status 0", proc.stdout)
        dirs = hook_dirs(self.out)
        self.assertEqual(len(dirs), 2, dirs)
        for d in dirs:
            with open(os.path.join(d, "hook.json")) as f:
                doc = json.load(f)
            doc["records"] = read_log(d)
            mods, scopes = module_scopes(doc)
            # Each log defines its modules from id 1 (the child's are its own)
            # and holds its own process's scopes only: the parent ran 2 steps,
            # the child 1 after the fork.
            self.assertEqual(sorted(mods), list(range(1, len(mods) + 1)))
            calls = len([s for s in scopes if s[2]["path"] == "main.0"])
            self.assertEqual(calls, 1 if doc["pid"] == child else 2, d)

    def test_optimizer_in_backward(self):
        run([script("train_opt_in_backward.py"), "3"], hook_env(self.out))
        _, doc = load_single(self.out)
        self.assert_schema(doc)
        steps = self.assert_well_formed(doc)
        self.assertEqual(len(steps), 3)
        for k in range(3):
            (backward,) = self.of(doc, k, "backward")
            (forward,) = self.of(doc, k, "forward")
            optimizer = self.of(doc, k, "optimizer")
            self.assertEqual(len(optimizer), 6, "one SGD per parameter")
            self.assertLessEqual(forward["end_ns"], backward["start_ns"])
            for o in optimizer:
                self.assertTrue(self.inside(o, backward), "%s not in %s" % (o, backward))
            # The step ends with its backward, not at the next forward.
            self.assertEqual(steps[k]["end_ns"], backward["end_ns"])


class Startup(Base):
    def test_chain_sitecustomize(self):
        user = os.path.join(self.tmp, "user")
        os.makedirs(user)
        marker = os.path.join(self.tmp, "marker")
        with open(os.path.join(user, "sitecustomize.py"), "w") as f:
            f.write("import os\nopen(os.environ['MEMSCOPE_TEST_MARKER'], 'a').write('ran\\n')\n")
        env = hook_env(self.out, MEMSCOPE_TEST_MARKER=marker)
        env["PYTHONPATH"] = HOOK + os.pathsep + user
        run([script("train_checkpoint.py"), "1", "1"], env)
        with open(marker) as f:
            self.assertEqual(f.read(), "ran\n")
        _, doc = load_single(self.out)
        self.assert_training_steps(doc, 1, recomputes_per_step=2)
        # Inactive hook: the user's file still runs, nothing is recorded.
        os.unlink(marker)
        env.pop("MEMSCOPE_HOOK")
        out2 = os.path.join(self.tmp, "out2")
        env["MEMSCOPE_OUTPUT_DIR"] = out2
        run([script("train_checkpoint.py"), "1", "1"], env)
        self.assertTrue(os.path.exists(marker))
        self.assertFalse(os.path.exists(os.path.join(out2, ".memscope-hook")))
        # With only our folder: the interpreter's own sitecustomize (Debian's
        # /usr/lib/python3.X/sitecustomize.py) is the one chained.
        probe = "import sitecustomize as s; print(getattr(s, '__file__', None))"
        own = subprocess.run([PY, "-c", probe], env=base_env(), capture_output=True, text=True)
        expected = own.stdout.strip() if own.returncode == 0 else "None"
        chained = run(["-c", "import sitecustomize as s; c = s._memscope_chained; "
                             "print(c.__file__ if c else None)"], hook_env(self.out)).stdout.strip()
        self.assertEqual(os.path.realpath(chained) if chained != "None" else chained,
                         os.path.realpath(expected) if expected != "None" else expected)

    def test_inert(self):
        env = base_env()
        env.update(PYTHONPATH=HOOK, MEMSCOPE_OUTPUT_DIR=self.out)  # no MEMSCOPE_HOOK=1
        proc = run([script("train_checkpoint.py"), "1", "1"], env)
        self.assertNotIn("memscope", proc.stderr)
        self.assertEqual(hook_dirs(self.out), [])
        self.assertFalse(os.path.exists(os.path.join(self.out, ".memscope-hook")))
        # Never imports torch / imports it but trains nothing: no folder.
        for name in ("no_torch.py", "idle_torch.py"):
            proc = run([script(name)], hook_env(self.out))
            self.assertNotIn("memscope", proc.stderr)
            self.assertEqual(hook_dirs(self.out), [], name)
        # A broken environment: one line on stderr, the program still runs.
        env = hook_env(self.out)
        env.pop("MEMSCOPE_OUTPUT_DIR")
        proc = run([script("train_checkpoint.py"), "1", "1"], env)
        lines = [l for l in proc.stderr.splitlines() if "memscope" in l]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("memscope hook: "), lines[0])
        self.assertTrue(lines[0].endswith("; recording without it"), lines[0])
        self.assertIn("done", proc.stdout)

    def test_child_processes(self):
        proc = subprocess.Popen([PY, script("workers.py")], env=hook_env(self.out),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stdout, stderr = proc.communicate(timeout=170)
        self.assertEqual(proc.returncode, 0, stderr)
        dirs = hook_dirs(self.out)
        self.assertEqual([os.path.basename(d) for d in dirs], [str(proc.pid)],
                         "DataLoader workers and the spawned helper must leave nothing")
        _, doc = load_single(self.out)
        self.assertEqual(len(self.assert_well_formed(doc)), 4)


class Signals(Base):
    def wait_running(self, proc, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                self.fail("the script ended early: %s" % (proc.communicate(),))
            for d in hook_dirs(self.out):
                try:
                    with open(os.path.join(d, "hook.json")) as f:
                        doc = json.load(f)
                except (OSError, ValueError):
                    continue
                self.assertEqual(doc["exit"], "running")
                self.assertIs(doc["complete"], False)
                return doc
            time.sleep(0.1)
        proc.kill()
        self.fail("no hook.json with exit 'running' within %ds" % timeout)

    def terminate(self, args, env, signum=signal.SIGTERM):
        # SIGINT may be inherited ignored (background jobs): give the child
        # Python's usual default.
        proc = subprocess.Popen([PY] + args, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            self.wait_running(proc)
            time.sleep(0.5)  # a few steps in
            proc.send_signal(signum)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(proc.returncode, -signum, stderr)
        d, doc = load_single(self.out)
        self.assert_schema(doc, exit_reason=signal.Signals(signum).name, complete=True)
        self.assertGreaterEqual(len(self.assert_well_formed(doc, trailing_ok=True)), 1)
        return d, doc

    def test_sigterm(self):
        self.terminate([script("train_checkpoint.py"), "0", "1", "--forever"], hook_env(self.out))

    def test_sigint(self):
        # Chained to Python's KeyboardInterrupt; atexit writes the final file.
        self.terminate([script("train_checkpoint.py"), "0", "1", "--forever"], hook_env(self.out),
                       signal.SIGINT)

    def test_history_sigterm(self):
        log = os.path.join(self.tmp, "calls.json")
        d, doc = self.terminate([script("cuda_stub.py"), "2.1", "0", log, "--forever"],
                                hook_env(self.out, MEMSCOPE_HISTORY_MAX_ENTRIES=100000000))
        self.assertEqual([h["file"] for h in doc["histories"]], ["history-0001.pickle"])
        self.assertTrue(os.path.isfile(os.path.join(d, "history-0001.pickle")))


class History(Base):
    def check(self, api, expected_api, expect_cleared):
        log = os.path.join(self.tmp, "calls.json")
        run([script("cuda_stub.py"), api, "6", log],
            hook_env(self.out, MEMSCOPE_HISTORY_MAX_ENTRIES=2000))
        d, doc = load_single(self.out)
        self.assert_schema(doc)
        observer = ("attached" if api != "1.13" else
                    "unavailable: no torch._C._cuda_attach_out_of_memory_observer in this "
                    "PyTorch (an OOM is dumped only at exit)")
        self.assertEqual(doc["history"], {"enabled": True, "api": expected_api,
                                          "max_entries": 2000, "reason": "", "ring": False,
                                          "oom_observer": observer})
        # ~600 entries per step, threshold 1000: dumps after steps 1, 3, 5, then at exit.
        files = [h["file"] for h in doc["histories"]]
        self.assertEqual(files, ["history-%04d.pickle" % i for i in range(1, 5)])
        self.assertEqual([h["cleared_before"] for h in doc["histories"]],
                         [False] + [expect_cleared] * 3)
        for i, name in enumerate(files):
            with open(os.path.join(d, name), "rb") as f:
                self.assertEqual(f.read(2), b"\x80\x04", "pickle protocol 4")
                f.seek(0)
                snap = pickle.load(f)
            self.assertEqual(snap["device_traces"][0][0]["addr"], i + 1)
        self.assertEqual(snap["counters"]["allocation.all.allocated"], 1200)
        self.assertEqual(len(self.assert_well_formed(doc)), 6)
        with open(log) as f:
            return json.load(f)

    def test_history_legacy_api(self):
        calls = self.check("1.13", "1.13", False)
        self.assertEqual(calls, [{"enabled": True, "trace_alloc_max_entries": 2000,
                                  "trace_alloc_record_context": True}])

    def test_history_2_1_api(self):
        calls = self.check("2.1", "2.1+", False)
        self.assertEqual(calls, [{"enabled": "all", "context": "alloc", "stacks": "python",
                                  "max_entries": 2000}])

    def test_history_cpp_frames_for_ops(self):
        # record --ops frames: the 2.1+ history records C++ frames.
        log = os.path.join(self.tmp, "calls.json")
        run([script("cuda_stub.py"), "2.1", "6", log],
            hook_env(self.out, MEMSCOPE_HISTORY_MAX_ENTRIES=2000, MEMSCOPE_OPS="frames"))
        _, doc = load_single(self.out)
        self.assertTrue(doc["hooks"]["ops"].startswith("frames:"), doc["hooks"]["ops"])
        with open(log) as f:
            calls = json.load(f)
        self.assertEqual(calls[0]["stacks"], "all")

    def test_history_2_5_api(self):
        calls = self.check("2.5", "2.1+", True)
        self.assertEqual(calls[0], {"enabled": "all", "context": "alloc", "stacks": "python",
                                    "max_entries": 2000, "clear_history": False,
                                    "compile_context": True, "global_record_annotations": True})
        # Re-enabled with clear_history after each dump.
        self.assertEqual(len(calls), 5)
        self.assertTrue(all(c["clear_history"] for c in calls[1:]))


class Profiler(Base):
    def test_profiler_detection(self):
        proc = run([script("profiled.py")], hook_env(self.out))
        self.assertEqual(proc.stderr.count(PROFILER_MESSAGE), 1, proc.stderr)
        _, doc = load_single(self.out)
        self.assert_schema(doc)
        self.assertEqual([p["what"] for p in doc["profiler"]],
                         ["torch.profiler.profile started", "torch.autograd.profiler.profile started"])
        steps = self.assert_well_formed(doc)
        self.assertEqual(len(steps), 3)
        self.assertTrue(steps[1]["start_ns"] <= doc["profiler"][0]["time_ns"] <= steps[2]["start_ns"]
                        or doc["profiler"][0]["time_ns"] <= steps[1]["start_ns"])


class Capture(Base):
    def setUp(self):
        super().setUp()
        self.lib = os.environ.get("MEMSCOPE_PYHOOK_FAKE_CAPTURE", "")
        if not os.path.isfile(self.lib):
            self.skipTest("fake capture library not built: %r" % self.lib)

    def test_capture_library(self):
        version = torch_version()
        major_minor = ".".join(version.split(".")[:2])
        env = hook_env(self.out, MEMSCOPE_TORCH_CAPTURE_LIBRARY=self.lib,
                       MEMSCOPE_FAKE_CAPTURE_TORCH_VERSION=major_minor + ".7")
        run([script("train_checkpoint.py"), "1", "1"], env)
        d, doc = load_single(self.out)
        self.assertEqual(doc["cpu_events"], {"file": "cpu-events.bin"})
        with open(os.path.join(d, "cpu-events.bin")) as f:
            lines = f.read().splitlines()
        # Started once, flushed at each step end and before each hook.json write.
        self.assertEqual(lines[0], "start")
        self.assertGreaterEqual(lines.count("flush"), 3)
        self.assertEqual(set(lines[1:]), {"flush"})
        # Built for another torch: not started, and said so.
        shutil.rmtree(self.out)
        env["MEMSCOPE_FAKE_CAPTURE_TORCH_VERSION"] = "9.9"
        run([script("train_checkpoint.py"), "1", "1"], env)
        d, doc = load_single(self.out)
        self.assertIsNone(doc["cpu_events"])
        self.assertFalse(os.path.exists(os.path.join(d, "cpu-events.bin")))
        self.assertIn("CPU tensors not captured: capture library built for torch 9.9, "
                      "this process runs %s" % version, doc["warnings"])
        # Missing file: a warning, the rest records.
        shutil.rmtree(self.out)
        env["MEMSCOPE_TORCH_CAPTURE_LIBRARY"] = os.path.join(self.tmp, "missing.so")
        run([script("train_checkpoint.py"), "1", "1"], env)
        _, doc = load_single(self.out)
        self.assertIsNone(doc["cpu_events"])
        self.assertTrue(any("not found" in w for w in doc["warnings"]), doc["warnings"])


class FakeModule:
    """What ModuleRecorder needs of an nn.Module: named_modules() and a class."""

    def __init__(self, **children):
        self._children = children

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, child in self._children.items():
            yield from child.named_modules(prefix + ("." if prefix else "") + name)

    def __call__(self, rec, body=None, recompute=False):
        rec.pre(self, recompute)
        if body is not None:
            body()
        rec.post(self)


def fake_class(name):
    return type(name, (FakeModule,), {})


class ModulesUnit(unittest.TestCase):
    """Module scopes alone (memscope_hook/modules.py), fake modules and clock."""

    def setUp(self):
        sys.path.insert(0, HOOK)
        from memscope_hook import modules
        self.modules = modules
        self.t = 0

        def clock():
            self.t += 10
            return self.t
        self.clock = clock
        self.rec = modules.ModuleRecorder(depth=6, clock=clock)
        Linear, Block, Net = fake_class("Linear"), fake_class("Block"), fake_class("Net")
        self.Linear, self.Block, self.Net = Linear, Block, Net
        self.blocks = [Block(fc=Linear(), out=Linear()) for _ in range(2)]
        self.net = Net(embed=Linear(), blocks=FakeModule(**{"0": self.blocks[0],
                                                              "1": self.blocks[1]}))

    def forward(self, net=None, rec=None, recompute=False):
        net, rec = net or self.net, rec or self.rec
        blocks = net._children["blocks"]._children

        def block(b):
            return lambda: (b._children["fc"](rec, recompute=recompute),
                            b._children["out"](rec, recompute=recompute))

        def body():
            net._children["embed"](rec, recompute=recompute)
            for b in blocks.values():
                b(rec, block(b), recompute=recompute)
        net(rec, body, recompute=recompute)

    def records(self, rec=None):
        """(modules by id, scopes as (start, end, path, kind))."""
        mods, scopes = {}, []
        for r in (rec or self.rec).drain():
            if r["t"] == "module":
                mods[r["id"]] = r
            else:
                s = r["s"]
                for i in range(0, len(s), 4):
                    start = r["base_ns"] + s[i]
                    scopes.append((start, start + s[i + 1], s[i + 2], s[i + 3]))
        return mods, scopes

    def paths(self, mods, scopes):
        return sorted(mods[m]["path"] for _, _, m, _ in scopes)

    def test_paths_are_qualified_names_under_the_root(self):
        self.forward()
        mods, scopes = self.records()
        self.assertEqual(self.paths(mods, scopes),
                         ["", "blocks.0", "blocks.0.fc", "blocks.0.out", "blocks.1",
                          "blocks.1.fc", "blocks.1.out", "embed"])
        self.assertEqual({m["root"] for m in mods.values()}, {"Net"})
        self.assertEqual(mods[1]["class"], "Net")
        for start, end, _, kind in scopes:
            self.assertLess(start, end)
            self.assertEqual(kind, self.modules.FORWARD)
        # Nested: every block scope lies inside the root's.
        root = [s for s in scopes if mods[s[2]]["path"] == ""][0]
        for s in scopes:
            self.assertTrue(root[0] <= s[0] and s[1] <= root[1])

    def test_each_module_is_defined_once_and_called_twice_makes_two_scopes(self):
        self.forward()
        self.forward()
        shared = self.Linear()
        self.net._children["embed"] = shared  # not in the map: found by a rebuild
        mods, scopes = self.records()
        self.assertEqual(len(mods), 8)
        self.assertEqual(len(scopes), 16)
        fc = [m for m in mods.values() if m["path"] == "blocks.0.fc"][0]["id"]
        self.assertEqual(len([s for s in scopes if s[2] == fc]), 2)
        # Later drains define only new modules.
        self.forward()
        mods, scopes = self.records()
        self.assertEqual(len(scopes), 8)
        self.assertEqual([m["path"] for m in mods.values()], [])  # "embed" kept its id

    def test_recompute_scopes_carry_the_same_path(self):
        self.forward()
        first, _ = self.records()
        # A checkpointed block run again inside backward, with no module open.
        b = self.blocks[1]
        b(self.rec, lambda: b._children["fc"](self.rec, recompute=True), recompute=True)
        mods, scopes = self.records()
        self.assertEqual(mods, {})  # known modules: no new records
        self.assertEqual([(first[m]["path"], k) for _, _, m, k in scopes],
                         [("blocks.1.fc", self.modules.RECOMPUTE),
                          ("blocks.1", self.modules.RECOMPUTE)])

    def test_several_roots(self):
        G, D = fake_class("Generator"), fake_class("Discriminator")
        g, d1, d2 = G(main=self.Linear()), D(main=self.Linear()), D(main=self.Linear())
        for m in (g, d1, d2, d1):
            m(self.rec, lambda m=m: m._children["main"](self.rec))
        mods, scopes = self.records()
        labels = sorted({(m["root"], m["path"]) for m in mods.values()})
        self.assertEqual(labels, [("Discriminator", ""), ("Discriminator", "main"),
                                  ("Discriminator#2", ""), ("Discriminator#2", "main"),
                                  ("Generator", ""), ("Generator", "main")])
        self.assertEqual(len(scopes), 8)
        # A model dropped and made again (each epoch) takes its label back.
        del g
        import gc
        gc.collect()
        g2 = G(main=self.Linear())
        g2(self.rec)
        mods, scopes = self.records()
        self.assertEqual(mods, {})
        self.assertEqual(len(scopes), 1)

    def test_a_part_of_a_model_called_alone_keeps_its_path(self):
        self.forward()
        self.records()
        self.net._children["embed"](self.rec)  # model.embed(x) at top level
        mods, scopes = self.records()
        self.assertEqual(mods, {})
        self.assertEqual(len(scopes), 1)

    def test_a_module_made_inside_forward_is_named_after_its_parent(self):
        Dropout = fake_class("Dropout")
        b = self.blocks[0]
        for _ in range(20):  # a new one per call: one module, not twenty
            self.net(self.rec, lambda: b(self.rec, lambda: Dropout()(self.rec)))
        mods, scopes = self.records()
        self.assertIn("blocks.0.Dropout", [m["path"] for m in mods.values()])
        self.assertEqual(len(mods), 3)
        self.assertEqual(len(scopes), 60)

    def test_the_depth_limit_records_no_deeper_module_and_reads_no_clock(self):
        rec = self.modules.ModuleRecorder(depth=2, clock=self.clock)
        self.forward(rec=rec)
        mods, scopes = self.records(rec)
        self.assertEqual(self.paths(mods, scopes), ["", "blocks.0", "blocks.1", "embed"])
        self.assertEqual(self.t, 10 * 2 * 4)  # two clock reads per recorded scope
        # A block recomputed alone keeps its level: its children stay out.
        b = self.blocks[0]
        b(rec, lambda: b._children["fc"](rec, recompute=True), recompute=True)
        mods, scopes = self.records(rec)
        self.assertEqual(len(scopes), 1)
        off = self.modules.ModuleRecorder(depth=0, clock=self.clock)
        self.forward(rec=off)
        self.assertEqual(off.drain(), [])

    def test_a_forward_that_raised_leaves_no_stale_scope(self):
        # PyTorch before 2.1 runs no post hook for a forward that raised.
        self.rec.pre(self.net)
        self.rec.pre(self.blocks[0])
        self.rec.pre(self.blocks[0]._children["fc"])  # raises; the loop catches it
        self.forward()  # the next iteration
        mods, scopes = self.records()
        self.assertEqual(len(scopes), 8)
        # Caught inside the block: its post pops the inner one too.
        b = self.blocks[1]
        self.net(self.rec, lambda: (self.rec.pre(b), self.rec.pre(b._children["fc"]),
                                    self.rec.post(b)))
        _, scopes = self.records()
        self.assertEqual(self.paths(mods, scopes), ["", "blocks.1"])

    def test_after_fork_starts_over(self):
        self.forward()
        self.rec.drain()
        self.rec.pre(self.net)  # the fork happens mid-forward
        self.rec.after_fork()
        self.forward()
        mods, scopes = self.records()
        self.assertEqual(len(mods), 8)  # the child's log defines them again
        self.assertEqual(min(mods), 1)
        self.assertEqual(len(scopes), 8)

    def test_backward_scopes(self):
        # PyTorch 2.0+'s global full backward hooks, on an autograd thread:
        # modules whose forward was recorded, nested, kind backward.
        self.forward()
        mods, _ = self.records()
        b = self.blocks[0]
        out = []

        def engine():
            self.rec.backward_pre(b)
            self.rec.backward_pre(b._children["fc"])
            self.rec.backward_post(b._children["fc"])
            self.rec.backward_pre(self.Linear())  # never ran forward: no scope
            self.rec.backward_post(b)
        import threading
        t = threading.Thread(target=engine)
        t.start()
        t.join()
        _, scopes = self.records()
        self.assertEqual([(mods[m]["path"], k) for _, _, m, k in scopes],
                         [("blocks.0.fc", self.modules.BACKWARD),
                          ("blocks.0", self.modules.BACKWARD)])

    def test_compiled_modules(self):
        from memscope_hook import torch_hooks
        Inner = fake_class("GPT")
        inner = Inner(h=self.Linear())
        wrapper = fake_class("OptimizedModule")(_orig_mod=inner)
        wrapper._orig_mod = inner
        wrapper(self.rec, lambda: inner._children["h"](self.rec))
        mods, scopes = self.records()
        # Named as the model itself, not "_orig_mod.h".
        self.assertEqual(sorted((m["root"], m["path"]) for m in mods.values()),
                         [("GPT", ""), ("GPT", "h")])

        class FakeTorch:
            @staticmethod
            def compile(model, **kwargs):
                return ("compiled", model)
        fake = FakeTorch()
        self.assertEqual(torch_hooks._compile(fake, self.rec, None, {}, False),
                         "wrapped torch.compile (notes its use)")
        self.assertIsNone(self.rec.describe("off")["compile"])
        self.assertEqual(fake.compile(inner, mode="x"), ("compiled", inner))
        self.assertIn("may be missing", self.rec.describe("off")["compile"])

    def test_open_scopes_and_bounds(self):
        self.rec.pre(self.net)
        self.rec.pre(self.blocks[0])
        opened = self.rec.open_scopes(now=10 ** 6)
        self.assertEqual([(s[1], s[3]) for s in opened], [(10 ** 6, 0), (10 ** 6, 0)])
        self.assertEqual(self.modules.clamp_text("x" * 5000),
                         "x" * (self.modules.MAX_PATH_BYTES - 3) + "\u2026")
        self.assertEqual(len(self.modules.clamp_text("\u00e9" * 3000).encode()),
                         self.modules.MAX_PATH_BYTES - 1)  # no character cut in two
        many = [(i, i + 1, 1, 0) for i in range(self.modules.BATCH + 5)]
        out = self.modules.batches(many)
        self.assertEqual([len(b["s"]) // 4 for b in out], [self.modules.BATCH, 5])
        self.assertEqual(out[1]["base_ns"], self.modules.BATCH)


class Survival(Base):
    """Phases survive every way a job stops (the log is flushed per step)."""

    def steps_with_phases(self, doc):
        steps = [p for p in doc["phases"] if p["kind"] == "step"]
        for s in steps:
            kinds = {p["kind"] for p in doc["phases"] if p["step"] == s["step"]}
            self.assertTrue({"forward", "backward", "optimizer"} <= kinds,
                            "step %d lost phases: %s" % (s["step"], kinds))
        return steps

    def check_exit(self, mode):
        proc = subprocess.run([PY, script("loops.py"), "zero_grad_start", "5", "--exit", mode],
                              env=hook_env(self.out), capture_output=True, text=True, timeout=150)
        _, doc = load_single(self.out)
        self.assertIs(doc["complete"], False, "atexit cannot have run")
        self.assertEqual(len(self.steps_with_phases(doc)), 5, proc.stderr)

    def test_os_exit_keeps_every_step(self):
        self.check_exit("os_exit")

    def test_sigkill_keeps_every_step(self):
        self.check_exit("sigkill")

    def test_kill_mid_run_keeps_completed_steps(self):
        proc = subprocess.Popen([PY, script("loops.py"), "forever", "0"], env=hook_env(self.out),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        done = 0
        try:
            for line in proc.stdout:
                if line.startswith("step "):
                    done = int(line.split()[1]) + 1
                if done >= 25:
                    break
            proc.kill()
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertGreaterEqual(done, 25, "the script did not get going")
        _, doc = load_single(self.out)
        steps = self.steps_with_phases(doc)
        self.assertGreaterEqual(len(steps), done)
        self.assertEqual([s["step"] for s in steps], list(range(len(steps))))
        # The module scopes of every completed step were flushed with it.
        _, scopes = module_scopes(doc)
        calls = scope_paths(scopes, 0)
        for path in ("", "0", "1", "2"):
            self.assertGreaterEqual(calls.get(path, 0), done, (path, calls))

    def test_oom_dumps_the_history_at_once(self):
        log = os.path.join(self.tmp, "calls.json")
        proc = subprocess.run([PY, script("cuda_stub.py"), "2.1", "6", log],
                              env=hook_env(self.out, MEMSCOPE_TEST_OOM_AT=3),
                              capture_output=True, text=True, timeout=150)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        d, doc = load_single(self.out)
        self.assertEqual(doc["history"]["oom_observer"], "attached")
        self.assertEqual([h["file"] for h in doc["histories"]], ["history-0001.pickle"])
        self.assertTrue(os.path.isfile(os.path.join(d, "history-0001.pickle")))
        ooms = [r for r in doc["records"] if r["t"] == "oom"]
        self.assertEqual([(r["device"], r["bytes"]) for r in ooms], [(0, 1 << 30)])
        self.assertEqual(len(self.steps_with_phases(doc)), 3)

    def test_second_sigint_waits_for_the_final_write(self):
        log = os.path.join(self.tmp, "calls.json")
        proc = subprocess.Popen([PY, script("cuda_stub.py"), "2.1", "0", log, "--forever"],
                                env=hook_env(self.out, MEMSCOPE_TEST_SLOW_SNAPSHOT=2),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            Signals.wait_running(self, proc)
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            time.sleep(1.0)  # inside the final (slow) history dump
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertNotIn("Exception ignored in atexit", stderr)
        d, doc = load_single(self.out)
        self.assertIs(doc["complete"], True, stderr)
        self.assertEqual(doc["exit"], "SIGINT")
        self.assertTrue(os.path.isfile(os.path.join(d, "history-0001.pickle")))

    def test_signals_are_acknowledged_on_the_pipe(self):
        read_end, write_end = os.pipe()
        env = hook_env(self.out, MEMSCOPE_SIGNAL_ACK_FD=write_end)
        proc = subprocess.Popen([PY, script("loops.py"), "forever", "0"], env=env,
                                pass_fds=(write_end,), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        os.close(write_end)
        try:
            proc.stdout.readline()  # a step is done: the hook is in
            proc.send_signal(signal.SIGINT)
            got = os.read(read_end, 16)
            proc.communicate(timeout=60)
        finally:
            os.close(read_end)
            if proc.poll() is None:
                proc.kill()
        self.assertIn(bytes([signal.SIGINT]), got)


class CaptureRange(Base):
    def run_stub(self, api, steps, **env):
        log = os.path.join(self.tmp, "calls.json")
        run([script("cuda_stub.py"), api, str(steps), log], hook_env(self.out, **env))
        d, doc = load_single(self.out)
        with open(log) as f:
            return d, doc, json.load(f)

    def switches(self, doc):
        return [(r["on"], r.get("step"), r.get("nvtx")) for r in doc["records"]
                if r["t"] == "capture"]

    def test_steps_switch_the_history_on_and_off(self):
        d, doc, calls = self.run_stub("2.5", 6, MEMSCOPE_STEPS="2:3")
        self.assertEqual(doc["capture"], {"steps": [2, 3]})
        self.assertEqual([c["enabled"] for c in calls], ["all", None])
        self.assertEqual(self.switches(doc), [(True, 2, None), (False, 3, None)])
        on, off = [r["time_ns"] for r in doc["records"] if r["t"] == "capture"]
        steps = {s["step"]: s for s in doc["phases"] if s["kind"] == "step"}
        # On as step 2 opens (its first event), off as step 3 closes.
        self.assertTrue(steps[1]["end_ns"] <= on <= steps[2]["end_ns"])
        self.assertTrue(steps[3]["end_ns"] <= off <= steps[4]["start_ns"])
        # One dump, when the range ended; none at exit (the history was off).
        self.assertEqual([h["file"] for h in doc["histories"]], ["history-0001.pickle"])
        self.assertEqual(len(steps), 6, "every step keeps its phases")

    def test_nvtx_range_switches_the_history(self):
        d, doc, calls = self.run_stub("2.1", 6, MEMSCOPE_TEST_NVTX="prof:2:3",
                                      MEMSCOPE_CAPTURE_RANGE="nvtx:prof")
        self.assertEqual(doc["capture"], {"nvtx": "prof"})
        self.assertIn("range_push", doc["hooks"]["nvtx"])
        self.assertEqual([c["enabled"] for c in calls], ["all", None])
        self.assertEqual(self.switches(doc), [(True, None, "prof"), (False, None, "prof")])
        (rng,) = [r for r in doc["records"] if r["t"] == "nvtx_range"]
        steps = {s["step"]: s for s in doc["phases"] if s["kind"] == "step"}
        self.assertTrue(steps[1]["end_ns"] <= rng["start_ns"] <= steps[2]["start_ns"])
        self.assertTrue(steps[3]["end_ns"] <= rng["end_ns"])

    def test_ring_keeps_only_the_last_entries(self):
        d, doc, calls = self.run_stub("2.1", 6, MEMSCOPE_HISTORY_RING=1,
                                      MEMSCOPE_HISTORY_MAX_ENTRIES=2000)
        self.assertIs(doc["history"]["ring"], True)
        # No dump before the ring wraps: only the one at exit.
        self.assertEqual([h["file"] for h in doc["histories"]], ["history-0001.pickle"])


CASES = {
    "recorder_unit": (RecorderUnit, None),
    "modules_unit": (ModulesUnit, None),
    "training_reentrant": (Training, "test_training_reentrant"),
    "training_nonreentrant": (Training, "test_training_nonreentrant"),
    "optimizer_in_backward": (Training, "test_optimizer_in_backward"),
    "module_shapes": (Training, "test_module_shapes"),
    "module_depth": (Training, "test_module_depth"),
    "module_fork": (Training, "test_module_fork"),
    "chain_sitecustomize": (Startup, "test_chain_sitecustomize"),
    "inert": (Startup, "test_inert"),
    "child_processes": (Startup, "test_child_processes"),
    "sigterm": (Signals, "test_sigterm"),
    "sigint": (Signals, "test_sigint"),
    "history_sigterm": (Signals, "test_history_sigterm"),
    "history_legacy_api": (History, "test_history_legacy_api"),
    "history_2_1_api": (History, "test_history_2_1_api"),
    "history_2_5_api": (History, "test_history_2_5_api"),
    "history_cpp_frames_for_ops": (History, "test_history_cpp_frames_for_ops"),
    "profiler_detection": (Profiler, "test_profiler_detection"),
    "capture_library": (Capture, "test_capture_library"),
    "os_exit": (Survival, "test_os_exit_keeps_every_step"),
    "sigkill": (Survival, "test_sigkill_keeps_every_step"),
    "kill_mid_run": (Survival, "test_kill_mid_run_keeps_completed_steps"),
    "oom_observer": (Survival, "test_oom_dumps_the_history_at_once"),
    "second_sigint": (Survival, "test_second_sigint_waits_for_the_final_write"),
    "signal_ack": (Survival, "test_signals_are_acknowledged_on_the_pipe"),
    "capture_steps": (CaptureRange, "test_steps_switch_the_history_on_and_off"),
    "capture_nvtx": (CaptureRange, "test_nvtx_range_switches_the_history"),
    "history_ring": (CaptureRange, "test_ring_keeps_only_the_last_entries"),
}


def main():
    names = sys.argv[1:] or sorted(CASES)
    for name in names:
        if name not in CASES:
            print("unknown case %r; cases: %s" % (name, ", ".join(sorted(CASES))))
            return 2
    if not os.path.isfile(os.path.join(HOOK, "sitecustomize.py")):
        print("hook folder %s has no sitecustomize.py (build the memscope_pyhook target)" % HOOK)
        return 1
    needs_torch = any(CASES[n][1] is not None for n in names)
    if needs_torch and torch_version() is None:
        print("skipped: %s cannot import torch (apt-get install python3-torch, or set "
              "MEMSCOPE_PYHOOK_TEST_PYTHON)" % PY)
        return SKIP
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for name in names:
        cls, method = CASES[name]
        suite.addTest(loader.loadTestsFromTestCase(cls) if method is None else cls(method))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if result.skipped and not (result.failures or result.errors) and len(result.skipped) == result.testsRun:
        print("skipped: %s" % "; ".join(reason for _, reason in result.skipped))
        return SKIP
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
