#!/usr/bin/env python3
"""`memscope-cli record` end to end on plain PyTorch CPU scripts: the steps of
the trace are the loop's iterations, whatever the loop looks like and however
the job ends, and `--steps A:B` records exactly steps A..B.

usage: record_steps_test.py MEMSCOPE_CLI CASE

  shapes        every loop shape of tests/pyhook/scripts/loops.py, 3 iterations:
                3 steps, each with its forward and backward (and optimizer)
  os_exit       the script ends with os._exit(0): every step keeps its phases
  sigkill       the script is killed (SIGKILL) after its last step: the same
  killpg_sigint SIGINT to the process group (what Ctrl-C does) mid-run: the job
                gets one KeyboardInterrupt, nothing breaks its exit, and every
                step that completed keeps its phases
  steps_range   --steps 3:4 on a 10-step script: exactly steps 3 and 4, with
                their phases, starting from the state alive at step 3

Skips (77) without a python3 that imports torch.
"""
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import SKIP, Skip, fail, python_with_torch  # noqa: E402
LOOPS = os.path.join(HERE, "..", "pyhook", "scripts", "loops.py")
SHAPES = ("zero_grad_start", "zero_grad_end", "set_to_none_false", "model_zero_grad",
          "accumulation", "lr_scheduler", "gan", "eval_between", "eval_after", "no_optimizer")


def summary(cli, out):
    traces = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".memscope"))
    if len(traces) != 1:
        fail("expected one trace in %s, found %s" % (out, os.listdir(out)))
    p = subprocess.run([cli, "summary", "--json", traces[0]], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail("summary failed: %s" % p.stderr)
    return json.loads(p.stdout)["files"][0]


def check_steps(info, count, first=0, optimizer=True, label=""):
    steps = info["steps"]
    numbers = [s["step"] for s in steps]
    if numbers != list(range(first, first + count)):
        fail("%s: steps %s, expected %s" % (label, numbers, list(range(first, first + count))))
    for s in steps:
        need = {"forward", "backward"} | ({"optimizer"} if optimizer else set())
        if not need <= set(s["phases"]):
            fail("%s: step %d has phases %s, missing %s"
                 % (label, s["step"], sorted(s["phases"]), sorted(need - set(s["phases"]))))
    return steps


def record(cli, out, args, **kw):
    return subprocess.run([cli, "record", "-o", out] + args, capture_output=True, text=True,
                          timeout=240, **kw)


def case_shapes(cli, py, tmp):
    for shape in SHAPES:
        out = os.path.join(tmp, shape)
        p = record(cli, out, ["--", py, LOOPS, shape, "3"])
        if p.returncode != 0:
            fail("%s: record exited %d\n%s" % (shape, p.returncode, p.stderr))
        # (How many backwards or optimizer steps each step holds is tested on
        # the hook's records: summary merges phases of a kind into one span.)
        steps = check_steps(summary(cli, out), 3, optimizer=shape != "no_optimizer", label=shape)
        print("ok  %-18s %d steps" % (shape, len(steps)))


def case_exit(cli, py, tmp, mode):
    out = os.path.join(tmp, mode)
    p = record(cli, out, ["--", py, LOOPS, "zero_grad_end", "6", "--exit", mode])
    check_steps(summary(cli, out), 6, label=mode)
    print("ok  %s: 6 steps, record exited %d" % (mode, p.returncode))


def case_killpg_sigint(cli, py, tmp):
    out = os.path.join(tmp, "sigint")
    # Its own process group, as a shell gives a job: record and the script in it.
    proc = subprocess.Popen([cli, "record", "-o", out, "--", py, "-u", LOOPS, "forever", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    done = 0
    try:
        for line in proc.stdout:
            if line.startswith("step "):
                done = int(line.split()[1]) + 1
            if done >= 30:
                break
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if done < 30:
        fail("the job did not get going: %s" % proc.stderr.read())
    if stderr.count("KeyboardInterrupt") != 1:
        fail("the job saw %d KeyboardInterrupts, expected 1:\n%s"
             % (stderr.count("KeyboardInterrupt"), stderr))
    if "Exception ignored" in stderr:
        fail("something broke the job's exit:\n%s" % stderr)
    steps = check_steps(summary(cli, out), len(summary(cli, out)["steps"]), label="sigint")
    if len(steps) < done:
        fail("sigint: %d steps kept, %d completed" % (len(steps), done))
    print("ok  SIGINT to the group after %d steps: %d steps kept, exit %d"
          % (done, len(steps), proc.returncode))


def case_steps_range(cli, py, tmp):
    out = os.path.join(tmp, "range")
    p = record(cli, out, ["--steps", "3:4", "--", py, LOOPS, "zero_grad_start", "10"])
    if p.returncode != 0:
        fail("record --steps exited %d\n%s" % (p.returncode, p.stderr))
    info = summary(cli, out)
    steps = check_steps(info, 2, first=3, label="--steps 3:4")
    host = info["devices"]["-1"]
    start_us = steps[0]["start_us"]
    if host["first_time_us"] < start_us:
        fail("an event before step 3: %s < %s" % (host["first_time_us"], start_us))
    if host["last_time_us"] > steps[-1]["end_us"]:
        fail("an event after step 4: %s > %s" % (host["last_time_us"], steps[-1]["end_us"]))
    # The model's parameters were allocated before step 3 and are alive at
    # its start: they are carried in, so live memory never drops below them.
    params = (32 * 64 + 64 + 64 * 8 + 8) * 4
    if host["final_active_bytes"] < params:
        fail("final live %d B is less than the parameters' %d B: the state alive at step 3 is "
             "missing" % (host["final_active_bytes"], params))
    print("ok  --steps 3:4: steps %s, events within [%d, %d] us, final live %d B"
          % ([s["step"] for s in steps], start_us, steps[-1]["end_us"],
             host["final_active_bytes"]))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    cli, case = sys.argv[1], sys.argv[2]
    try:
        py = python_with_torch()
    except Skip as exc:
        print("skipped:", exc)
        return SKIP
    tmp = tempfile.mkdtemp(prefix="memscope-record-steps-")
    try:
        if case == "shapes":
            case_shapes(cli, py, tmp)
        elif case in ("os_exit", "sigkill"):
            case_exit(cli, py, tmp, case)
        elif case == "killpg_sigint":
            case_killpg_sigint(cli, py, tmp)
        elif case == "steps_range":
            case_steps_range(cli, py, tmp)
        else:
            print("unknown case", case)
            return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
