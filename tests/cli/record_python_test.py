#!/usr/bin/env python3
"""`memscope-cli record -o DIR -- python3 train.py` on a plain PyTorch CPU
script with checkpointing and Adam: every step's forward, backward, recompute
and optimizer phases; the CPU tensors' timeline (c10's reports); both on one
clock; the hook's parts merged away. Skips (77) without a python3 that has
PyTorch.

usage: record_python_test.py MEMSCOPE_CLI
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "record_scripts", "train_checkpoint_adam.py")


def python_with_torch():
    for candidate in ("python3", "/usr/bin/python3"):
        try:
            if subprocess.run([candidate, "-c", "import torch"], capture_output=True).returncode == 0:
                return candidate
        except OSError:
            pass
    return None


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    cli = sys.argv[1]
    python = python_with_torch()
    if not python:
        print("SKIP: no python3 with PyTorch (apt-get install python3-torch)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "runs")
        # The user's own environment carries on: an existing PYTHONPATH entry
        # stays importable behind the hook.
        user_dir = os.path.join(tmp, "user")
        os.makedirs(user_dir)
        with open(os.path.join(user_dir, "user_helper.py"), "w") as f:
            f.write("VALUE = 7\n")
        env = dict(os.environ, PYTHONPATH=user_dir)
        p = subprocess.run([cli, "record", "-o", out, "--", python, "-c",
                            "import user_helper, runpy, sys; assert user_helper.VALUE == 7; "
                            f"sys.argv = ['train', '3']; runpy.run_path({SCRIPT!r}, run_name='__main__')"],
                           capture_output=True, text=True, env=env, timeout=300)
        print(p.stdout)
        print(p.stderr, file=sys.stderr)
        if p.returncode != 0:
            fail(f"record exited {p.returncode}")
        if "trained 3 steps" not in p.stdout:
            fail("the training script did not finish")
        traces = [f for f in os.listdir(out) if f.endswith(".memscope")]
        if len(traces) != 1:
            fail(f"expected one trace, found {os.listdir(out)}")
        if os.path.exists(os.path.join(out, ".memscope-hook")):
            fail("the hook's parts were left behind after a successful merge")
        s = subprocess.run([cli, "summary", "--json", os.path.join(out, traces[0])],
                           capture_output=True, text=True)
        if s.returncode != 0:
            fail(f"summary failed: {s.stderr}")
        report = json.loads(s.stdout)["files"][0]
        # Named after the program: `python -c` that set sys.argv = ['train', '3'].
        if report.get("name") != "train":
            fail(f"the run is named {report.get('name')!r}, expected 'train'")

        steps = report.get("steps", [])
        if [st["step"] for st in steps] != [0, 1, 2]:
            fail(f"steps {[st['step'] for st in steps]}, expected [0, 1, 2]")
        for st in steps:
            missing = {"forward", "backward", "recompute", "optimizer"} - set(st["phases"])
            if missing:
                fail(f"step {st['step']} lacks {sorted(missing)}: {st['phases']}")
        if "recorded" not in report.get("phases_source", ""):
            fail(f"phases not marked as recorded: {report.get('phases_source')}")

        host = report["devices"].get("-1")
        capture = os.path.join(os.path.dirname(os.path.realpath(cli)), "..", "lib",
                               "libmemscope_torch_capture.so")
        if not host and not os.path.exists(capture):
            # A build without LibTorch has no CPU capture library: phases only.
            print(f"PASS (phases only; no {capture}, so no CPU tensors)")
            return 0
        if not host:
            fail(f"no host timeline (CPU tensors not captured); devices {list(report['devices'])}")
        if host["alloc_count"] < 100 or host["peak_active_bytes"] < 256 * 128 * 4:
            fail(f"implausible CPU timeline: {host['alloc_count']} allocs, peak {host['peak_active_bytes']} B")
        # One clock: the allocations (C++, CLOCK_REALTIME) fall inside the
        # recording's phases (Python, time.time_ns) give or take start-up.
        first_step, last_step = steps[0]["start_us"], steps[-1]["end_us"]
        peak = host["peak_time_us"]
        if not (first_step <= peak <= last_step):
            fail(f"the CPU peak at {peak} µs lies outside the steps [{first_step}, {last_step}] µs")
        by_phase = host.get("peaks_by_phase", {})
        for phase in ("forward", "backward", "optimizer"):
            if phase not in by_phase:
                fail(f"no {phase} peak on the host timeline: {sorted(by_phase)}")
        print(f"PASS: 3 steps with forward/backward/recompute/optimizer; host peak "
              f"{host['peak_active_bytes']} B in {host['alloc_count']} allocations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
