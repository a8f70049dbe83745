#!/usr/bin/env python3
"""What tensor roles cost a recorded training step: roles_train.py (a CPU
transformer, AdamW) recorded by `memscope-cli record` with the hook's tensor
roles on and with --no-tensor-roles, in alternating runs (on, off, on, off,
...), so that drift on a shared machine falls on both. Each run prints its
median step time; the figures are the medians of those, and the overhead
on / off. A benchmark that prints figures, never a pass/fail test.

usage: bench_record_roles.py [--cli PATH] [--python PATH] [--pairs N] [--steps N]
                             [--layers N]
  --cli     memscope-cli (default: build/bin/memscope-cli beside this tree)
  --python  a python3 with torch (default: python3 on PATH, else /usr/bin/python3)
  --pairs   on/off run pairs (default 4)
  --steps   measured steps per run (default 30; 3 warm-up steps before)
  --layers  encoder layers of the model (default 12)
Prints:  roles on: median step X ms (runs: ...)
         roles off: median step Y ms (runs: ...)
         overhead: +Z % (on / off - 1)
Exit 0, or 1 when a run failed, 2 on a bad argument.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from bench_util import torch_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SCRIPT = os.path.join(HERE, "roles_train.py")
STEP = re.compile(r"median step: ([0-9.]+) ms")


def one_run(cli, py, out, roles, steps, layers):
    cmd = [cli, "record", "-o", out]
    if not roles:
        cmd.append("--no-tensor-roles")
    cmd += ["--", py, SCRIPT, "--steps", str(steps), "--layers", str(layers)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    m = STEP.search(p.stdout)
    if p.returncode != 0 or m is None:
        raise RuntimeError("%s exited %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout,
                                                     p.stderr))
    shutil.rmtree(out, ignore_errors=True)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\nusage:")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "memscope-cli"))
    ap.add_argument("--python")
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    if args.pairs < 1 or args.steps < 1 or args.layers < 1:
        ap.error("--pairs, --steps and --layers take a positive number")
    py = args.python or torch_python()
    if py is None:
        print("no python3 with torch (apt-get install python3-torch, or --python)")
        return 1
    tmp = tempfile.mkdtemp(prefix="memscope-bench-roles-")
    times = {True: [], False: []}
    try:
        for i in range(args.pairs):
            # Alternate which goes first, so neither always runs on a warmer machine.
            for roles in ((True, False) if i % 2 == 0 else (False, True)):
                ms = one_run(args.cli, py, os.path.join(tmp, "run%d" % i), roles, args.steps,
                             args.layers)
                times[roles].append(ms)
                print("run %d, roles %s: median step %.3f ms" % (i + 1, "on" if roles else "off",
                                                                 ms), flush=True)
    except RuntimeError as exc:
        print("bench_record_roles: %s" % exc)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    on, off = statistics.median(times[True]), statistics.median(times[False])
    for name, key, value in (("roles on", True, on), ("roles off", False, off)):
        print("%s: median step %.3f ms (runs: %s)"
              % (name, value, ", ".join("%.3f" % t for t in times[key])))
    print("overhead: %+.2f %% (on / off - 1)" % (100 * (on / off - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
