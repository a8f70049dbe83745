#!/usr/bin/env python3
"""What recording the ops costs a training step: roles_train.py (a CPU
transformer, AdamW) run without memscope, and recorded by `memscope-cli
record` with --ops off, --ops auto (at::RecordFunction in the capture
library) and --ops dispatch (the hook's TorchDispatchMode), in rounds that
run each once, in an order that rotates from round to round, so that drift
on a shared machine falls on all. Each run prints its median step time; the
figures are the medians of those per configuration. A benchmark that prints
figures, never a pass/fail test (auto's budget, 3 % over off, is read by a
person: docs/PERFORMANCE.md).

usage: bench_record_ops.py [--cli PATH] [--python PATH] [--rounds N] [--steps N]
                           [--layers N]
  --cli     memscope-cli (default: build/bin/memscope-cli beside this tree)
  --python  a python3 with torch (default: python3 on PATH, else /usr/bin/python3)
  --rounds  rounds of the four runs (default 3)
  --steps   measured steps per run (default 30; 3 warm-up steps before)
  --layers  encoder layers of the model (default 12)
Prints:  none: median step X ms, cpu Y ms (runs, cpu: ...)  (one line per configuration)
         auto / off: +Z % (cpu; wall +W %)   (and dispatch / off, off / none)
The ratios use the training thread's CPU time, which other work on a shared
machine disturbs least.
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
STEP = re.compile(r"median step: ([0-9.]+) ms over \d+ steps \(main thread cpu ([0-9.]+) ms\)")
CONFIGS = ("none", "off", "auto", "dispatch")


def one_run(cli, py, out, config, steps, layers):
    job = [py, SCRIPT, "--steps", str(steps), "--layers", str(layers)]
    cmd = job if config == "none" else [cli, "record", "-o", out, "--ops", config, "--"] + job
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    m = STEP.search(p.stdout)
    if p.returncode != 0 or m is None:
        raise RuntimeError("%s exited %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout,
                                                     p.stderr))
    if config == "auto" and "ops            not recorded" in p.stdout:
        raise RuntimeError("--ops auto recorded no ops here (the capture library did not "
                           "load):\n" + p.stdout)
    shutil.rmtree(out, ignore_errors=True)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\nusage:")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "memscope-cli"))
    ap.add_argument("--python")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.layers < 1:
        ap.error("--rounds, --steps and --layers take a positive number")
    py = args.python or torch_python()
    if py is None:
        print("no python3 with torch (apt-get install python3-torch, or --python)")
        return 1
    tmp = tempfile.mkdtemp(prefix="memscope-bench-ops-")
    times = {c: [] for c in CONFIGS}  # (wall, cpu) per run
    try:
        for i in range(args.rounds):
            order = CONFIGS[i % len(CONFIGS):] + CONFIGS[:i % len(CONFIGS)]
            for config in order:
                wall, cpu = one_run(args.cli, py, os.path.join(tmp, "run%d" % i), config,
                                    args.steps, args.layers)
                times[config].append((wall, cpu))
                print("round %d, %s: median step %.3f ms (cpu %.3f ms)" % (i + 1, config, wall,
                                                                          cpu), flush=True)
    except RuntimeError as exc:
        print("bench_record_ops: %s" % exc)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # The training thread's CPU time is what other work on a shared machine
    # disturbs least: the ratios use it; wall times are printed beside.
    wall = {c: statistics.median(w for w, _ in times[c]) for c in CONFIGS}
    cpu = {c: statistics.median(t for _, t in times[c]) for c in CONFIGS}
    for c in CONFIGS:
        print("%s: median step %.3f ms, cpu %.3f ms (runs, cpu: %s)"
              % (c, wall[c], cpu[c], ", ".join("%.3f" % t for _, t in times[c])))
    for a, b in (("auto", "off"), ("dispatch", "off"), ("off", "none")):
        print("%s / %s: %+.2f %% (cpu; wall %+.2f %%)"
              % (a, b, 100 * (cpu[a] / cpu[b] - 1), 100 * (wall[a] / wall[b] - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
