#!/usr/bin/env python3
"""Leaks end to end: `memscope-cli record` on a plain PyTorch CPU training
script (record_scripts/train_leaky.py) that keeps every step's logits and has
a forward hook storing the last block's output, then `leaks --json`:

  leaky: the growth per step within 10% of what the script says it keeps,
         with a group in module `head` (the logits) and one in `blocks.3`
         (the hook's outputs), each within 10% of its own bytes per step;
  fixed: the same script without the leaks: no growth.

usage: record_leaks_test.py MEMSCOPE_CLI CASE      (CASE: leaky, fixed)

Skips (77) without a python3 that imports torch.
"""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import (SKIP, Skip, fail, python_with_torch, record_script,  # noqa: E402
                              run_ok)

SCRIPT = os.path.join(HERE, "record_scripts", "train_leaky.py")
FLAGS = {"leaky": ["--keep-logits", "--hook-stores"], "fixed": []}
# What each leak keeps per step (train_leaky.py's shapes: B 8, T 64, D 128, vocab 512, fp32).
EXPECTED_GROUPS = {"head": 8 * 64 * 512 * 4, "blocks.3": 8 * 64 * 128 * 4}


def near(got, want, tolerance=0.10):
    return want > 0 and abs(got - want) <= tolerance * want


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in FLAGS:
        print(__doc__)
        return 2
    cli, case = sys.argv[1], sys.argv[2]
    try:
        py = python_with_torch()
    except Skip as exc:
        print("skipped:", exc)
        return SKIP
    tmp = tempfile.mkdtemp(prefix="memscope-record-leaks-")
    try:
        out, truth_file = os.path.join(tmp, "out"), os.path.join(tmp, "truth.json")
        trace = record_script(cli, out, [py, SCRIPT, "--truth", truth_file] + FLAGS[case])
        with open(truth_file) as f:
            truth = json.load(f)["growth_bytes_per_step"]
        report = json.loads(run_ok([cli, "leaks", "--json", trace]))
        if report.get("steps_inferred"):
            fail("the hook recorded the steps; leaks says they were inferred")
        device = max(report["devices"].values(), key=lambda d: d.get("steps") or 0)
        problems = []
        print("case %s: grows %s, %s B per step (the script keeps %d B)" %
              (case, device["grows"], device["growth_bytes_per_step"], truth))
        if case == "fixed":
            if device["grows"]:
                problems.append("the fixed script grows %s B per step" %
                                device["growth_bytes_per_step"])
        else:
            if not device["grows"] or not near(device["growth_bytes_per_step"], truth):
                problems.append("growth %s B per step, not within 10%% of %d B" %
                                (device["growth_bytes_per_step"], truth))
            by_module = {}
            for g in device.get("groups") or []:
                by_module[g.get("module")] = by_module.get(g.get("module"), 0) + \
                    g["bytes_per_step"]
            for module, want in EXPECTED_GROUPS.items():
                got = by_module.get(module, 0)
                print("  group %-10s %10.0f B per step (keeps %d B)" % (module, got, want))
                if not near(got, want):
                    problems.append("module %s: %.0f B per step, not within 10%% of %d B" %
                                    (module, got, want))
        if problems:
            fail("\n  " + "\n  ".join(problems))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
