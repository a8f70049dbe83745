#!/usr/bin/env python3
"""What `record --idle` costs a training step, and what an attach window
costs: roles_train.py (a CPU transformer, AdamW) run plain (no memscope), under
`memscope-cli record --idle` (hook loaded, recording nothing), and under
`record --idle` with `memscope-cli attach DIR` recording from its first steps
to its exit (a window over the measured steps). Runs rotate (plain, idle,
attached; then idle, attached, plain; ...) so that drift on a shared machine
falls on all. Each run prints its median step time, wall and the training
thread's CPU time (steadier on a loaded machine: --metric cpu, the default);
the figures are the medians of those, and the overheads against plain. A benchmark that prints
figures, never a pass/fail test.

usage: bench_record_idle.py [--cli PATH] [--python PATH] [--rounds N] [--steps N]
                            [--layers N] [--metric cpu|wall]
Prints:  plain / idle / attached: median step X ms (runs: ...)
         idle overhead: +Y %   attached overhead: +Z %
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
import time

from bench_util import torch_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SCRIPT = os.path.join(HERE, "roles_train.py")
STEP = re.compile(r"median step: ([0-9.]+) ms over \d+ steps \(main thread cpu ([0-9.]+) ms\)")
MODES = ("plain", "idle", "attached")


def one_run(cli, py, out, mode, steps, layers, metric):
    script = [py, SCRIPT, "--steps", str(steps), "--layers", str(layers)]
    env = dict(os.environ)
    env.pop("XDG_RUNTIME_DIR", None)  # sockets in the run's own folder
    cmd = script if mode == "plain" else [cli, "record", "--idle", "-o", out, "--"] + script
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
    attach = None
    if mode == "attached":
        control = os.path.join(out, ".memscope-control")
        deadline = time.time() + 120
        while time.time() < deadline and job.poll() is None:
            if os.path.isdir(control) and any(f.endswith(".sock") for f in os.listdir(control)):
                attach = subprocess.Popen([cli, "attach", out], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)
                break
            time.sleep(0.05)
    stdout, stderr = job.communicate(timeout=900)
    if attach is not None:
        a_out, a_err = attach.communicate(timeout=300)
        if attach.returncode != 0:
            raise RuntimeError("attach exited %d\n%s" % (attach.returncode, a_err))
    m = STEP.search(stdout)
    if job.returncode != 0 or m is None or (mode == "attached" and attach is None):
        raise RuntimeError("%s exited %d\n%s\n%s" % (" ".join(cmd), job.returncode, stdout,
                                                     stderr))
    shutil.rmtree(out, ignore_errors=True)
    return float(m.group(1 if metric == "wall" else 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\nusage:")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "memscope-cli"))
    ap.add_argument("--python")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--metric", choices=("cpu", "wall"), default="cpu")
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.layers < 1:
        ap.error("--rounds, --steps and --layers take a positive number")
    py = args.python or torch_python()
    if py is None:
        print("no python3 with torch (apt-get install python3-torch, or --python)")
        return 1
    tmp = tempfile.mkdtemp(prefix="memscope-bench-idle-")
    times = {m: [] for m in MODES}
    try:
        for i in range(args.rounds):
            order = MODES[i % 3:] + MODES[:i % 3]
            for mode in order:
                ms = one_run(args.cli, py, os.path.join(tmp, "run%d-%s" % (i, mode)), mode,
                             args.steps, args.layers, args.metric)
                times[mode].append(ms)
                print("round %d, %s: median step %.3f ms (%s)" % (i + 1, mode, ms, args.metric),
                      flush=True)
    except RuntimeError as exc:
        print("bench_record_idle: %s" % exc)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {m: statistics.median(times[m]) for m in MODES}
    for m in MODES:
        print("%s: median step %.3f ms (runs: %s)"
              % (m, med[m], ", ".join("%.3f" % t for t in times[m])))
    print("idle overhead: %+.2f %%   attached overhead: %+.2f %% (against plain)"
          % (100 * (med["idle"] / med["plain"] - 1), 100 * (med["attached"] / med["plain"] - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
