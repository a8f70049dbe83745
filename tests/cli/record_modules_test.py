#!/usr/bin/env python3
"""Module scopes end to end: `memscope-cli record` on record_scripts/train_blocks.py
(an embedding, 4 blocks of which 1 and 3 are checkpointed, Adam), the trace
checked through the core API by memscope_record_modules_check.

usage: record_modules_test.py MEMSCOPE_CLI CHECKER CASE

  layers       3 steps, the default depth: blocks.0-3 and their children, one
               forward scope per block and step, recompute scopes for the
               checkpointed blocks; the activation bytes of blocks 0 and 2
               equal the bytes born in their forward and freed in backward;
               the peak by layer adds up to the peak
  depth        --module-depth 0 records no module; --module-depth 2 none
               deeper than blocks.N
  steps_range  --steps 1:1: the scopes of step 1 only, the same checks

Skips (77) without a python3 that imports torch.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import SKIP, Skip, fail, python_with_torch  # noqa: E402
SCRIPT = os.path.join(HERE, "record_scripts", "train_blocks.py")


def record(cli, py, out, args, steps):
    p = subprocess.run([cli, "record", "-o", out] + args + ["--", py, SCRIPT, str(steps)],
                       capture_output=True, text=True, timeout=240)
    if p.returncode != 0 or "trained %d steps" % steps not in p.stdout:
        fail("record %s exited %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    traces = [f for f in os.listdir(out) if f.endswith(".memscope")]
    if len(traces) != 1:
        fail("expected one trace in %s, found %s" % (out, os.listdir(out)))
    return os.path.join(out, traces[0])


def check(checker, trace, *args):
    p = subprocess.run([checker, trace] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=120)
    print(p.stdout, end="")
    if p.returncode != 0:
        fail("%s %s: exit %d\n%s" % (os.path.basename(checker), " ".join(map(str, args)),
                                     p.returncode, p.stderr))


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    cli, checker, case = sys.argv[1:]
    try:
        py = python_with_torch()
    except Skip as exc:
        print("skipped:", exc)
        return SKIP
    tmp = tempfile.mkdtemp(prefix="memscope-record-modules-")
    try:
        if case == "layers":
            check(checker, record(cli, py, os.path.join(tmp, "default"), [], 3), "layers", 3)
        elif case == "depth":
            check(checker, record(cli, py, os.path.join(tmp, "off"), ["--module-depth", "0"], 2),
                  "none")
            check(checker, record(cli, py, os.path.join(tmp, "two"), ["--module-depth", "2"], 2),
                  "depth", 2)
        elif case == "steps_range":
            check(checker, record(cli, py, os.path.join(tmp, "range"), ["--steps", "1:1"], 3),
                  "layers", 1)
        else:
            print(__doc__)
            return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok ", case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
