#!/usr/bin/env python3
"""`whatif` against what checkpointing really does, on a plain PyTorch script:
record_scripts/train_gpt_ckpt.py (a small GPT, 6 blocks, AdamW) recorded by
`memscope-cli record` three times, everything saved (--checkpoint none), every
block checkpointed (all) and blocks 0, 2, 4 checkpointed (every-other), 3
steps each. `memscope-cli whatif` on the full-save trace predicts `block` and
`layers:0,2,4`; each prediction is checked against the recorded run of the
same policy, whose figures are `memscope-cli summary --json`'s:

  - the layers found: 6, recorded (module scopes), not inferred;
  - the predicted peak within 5% of the recorded run's peak;
  - the predicted peak of forward, backward and optimizer each within 10% of
    the recorded run's peak of that phase.

Prints predicted against measured for every figure, then fails if any is out.

usage: record_whatif_test.py MEMSCOPE_CLI

Skips (77) without a python3 that imports torch.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import SKIP, Skip, fail, python_with_torch  # noqa: E402
SCRIPT = os.path.join(HERE, "record_scripts", "train_gpt_ckpt.py")

BLOCKS = 6          # train_gpt_ckpt.py's N_BLOCKS
STEPS = 3
PHASES = ("forward", "backward", "optimizer")
PEAK_TOLERANCE = 0.05
PHASE_TOLERANCE = 0.10
EVERY_OTHER = ",".join(str(i) for i in range(0, BLOCKS, 2))
# whatif's policy -> the --checkpoint mode of the script that really does it
POLICIES = (("block", "all"), ("layers:" + EVERY_OTHER, "every-other"))


def record(cli, py, out, mode):
    p = subprocess.run([cli, "record", "-o", out, "--", py, SCRIPT, "--checkpoint", mode,
                        "--steps", str(STEPS)], capture_output=True, text=True, timeout=240)
    if p.returncode != 0 or "trained %d steps" % STEPS not in p.stdout:
        fail("record --checkpoint %s exited %d\n%s\n%s" % (mode, p.returncode, p.stdout,
                                                           p.stderr))
    traces = [f for f in os.listdir(out) if f.endswith(".memscope")]
    if len(traces) != 1:
        fail("expected one trace in %s, found %s" % (out, os.listdir(out)))
    return os.path.join(out, traces[0])


def run_json(cli, args):
    p = subprocess.run([cli] + args, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        fail("memscope-cli %s exited %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                    p.stderr))
    try:
        return json.loads(p.stdout)
    except ValueError as exc:
        fail("memscope-cli %s: not JSON (%s)\n%s" % (" ".join(args), exc, p.stdout[:2000]))


def measured(cli, trace):
    """The peak and the peaks by phase of the device with the highest peak
    (the only one here: the CPU, device -1)."""
    summary = run_json(cli, ["summary", "--json", trace])
    devices = summary["files"][0]["devices"]
    if not devices:
        fail("%s: no device in the summary" % trace)
    device = max(devices.values(), key=lambda d: d["peak_active_bytes"])
    by_phase = device.get("peaks_by_phase") or {}
    return {"peak": device["peak_active_bytes"],
            **{ph: (by_phase[ph]["bytes"] if ph in by_phase else None) for ph in PHASES}}


def mib(b):
    return "-" if b is None else "%.2f MiB" % (b / 2**20)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    try:
        py = python_with_torch()
    except Skip as exc:
        print("skipped:", exc)
        return SKIP
    tmp = tempfile.mkdtemp(prefix="memscope-record-whatif-")
    try:
        traces = {mode: record(cli, py, os.path.join(tmp, mode), mode)
                  for mode in ("none", "all", "every-other")}
        args = ["whatif", traces["none"]]
        for policy, _ in POLICIES:
            args += ["--policy", policy]
        report = run_json(cli, args + ["--json"])

        problems = []
        layers = report.get("layers") or {}
        print("measured policy: %s; layers: %s, %s: %s"
              % (report.get("measured_policy"), layers.get("count"), layers.get("source"),
                 ", ".join(layers.get("names") or [])))
        if layers.get("count") != BLOCKS:
            problems.append("layers.count is %s, the script has %d blocks"
                            % (layers.get("count"), BLOCKS))
        if layers.get("source") != "recorded":
            problems.append("layers.source is %r, expected \"recorded\" (module scopes)"
                            % layers.get("source"))

        predictions = {p.get("policy"): p for p in report.get("predictions") or []}
        print("%-14s %-10s %14s %14s %8s %6s" % ("policy", "figure", "predicted", "measured",
                                                 "error", "within"))
        for policy, mode in POLICIES:
            real = measured(cli, traces[mode])
            pred = predictions.get(policy)
            if pred is None:
                problems.append("no prediction for %s (policies: %s)"
                                % (policy, ", ".join(map(str, predictions))))
                continue
            if "refused" in pred:
                problems.append("%s refused: %s" % (policy, pred["refused"]))
                continue
            by_phase = pred.get("peaks_by_phase") or {}
            rows = [("peak", pred.get("peak_bytes"), real["peak"], PEAK_TOLERANCE)]
            rows += [(ph, by_phase.get(ph), real[ph], PHASE_TOLERANCE) for ph in PHASES]
            for figure, p, m, tolerance in rows:
                if p is None or m is None:
                    error, ok = "-", False
                else:
                    rel = (p - m) / m if m else float("inf")
                    error, ok = "%+.1f%%" % (100 * rel), abs(rel) <= tolerance
                print("%-14s %-10s %14s %14s %8s %6s" % (policy, figure, mib(p), mib(m), error,
                                                         "±%d%%" % (100 * tolerance)
                                                         if ok else "NO"))
                if not ok:
                    problems.append("%s %s: predicted %s, measured %s (--checkpoint %s), "
                                    "tolerance ±%d%%" % (policy, figure, p, m, mode,
                                                         100 * tolerance))
            print("%-14s recompute %s us, step time x%s, assumptions: %s"
                  % (policy, pred.get("recompute_us"), pred.get("step_time_ratio"),
                     "; ".join(map(str, pred.get("assumptions") or []))))
        if problems:
            fail("\n  " + "\n  ".join(problems))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
