#!/usr/bin/env python3
"""`memscope-cli record --live` end to end on a plain PyTorch CPU script
(record_scripts/train_follow.py, 0.15 s per step): while the job runs, the
folder holds DIR/memscope-PID.live.memscope, a whole trace of what was
recorded so far, and a later look at it sees more steps than an earlier one
(what `memscope --follow DIR` reopens); when the job ends the final trace
replaces it, no live file is left, and the job's output is its own. --live
with --idle or --no-python-hook is refused before anything runs.

usage: record_live_test.py MEMSCOPE_CLI
Skips (77) without a python3 that imports torch.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import SKIP, Skip, fail, python_with_torch  # noqa: E402
SCRIPT = os.path.join(HERE, "record_scripts", "train_follow.py")
STEPS = 30


def steps_in(cli, trace, must=True):
    """The trace's steps; None when it cannot be read and need not be (a
    live file replaced or removed between the listing and the read)."""
    p = subprocess.run([cli, "summary", "--json", trace], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        if not must:
            return None
        fail("summary --json %s exited %d: %s" % (trace, p.returncode, p.stderr))
    return len(json.loads(p.stdout)["files"][0]["steps"])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    try:
        py = python_with_torch()
    except Skip as s:
        print("SKIP: %s" % s)
        return SKIP
    tmp = tempfile.mkdtemp(prefix="memscope-live-")
    try:
        out = os.path.join(tmp, "run")
        job = subprocess.Popen([cli, "record", "--live", "-o", out, "--", py, SCRIPT, str(STEPS),
                                "--sleep", "0.15"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        seen = []   # step counts of the live file, as it was replaced
        deadline = time.time() + 120
        while job.poll() is None and time.time() < deadline:
            for live in glob.glob(os.path.join(out, "memscope-*.live.memscope")):
                n = steps_in(cli, live, must=False)
                if n is None:
                    continue
                if not seen or n != seen[-1]:
                    seen.append(n)
            time.sleep(0.3)
        stdout, stderr = job.communicate(timeout=120)
        if job.returncode != 0:
            fail("record --live exited %d\n%s\n%s" % (job.returncode, stdout, stderr))
        if len(seen) < 2 or not seen[-1] > seen[0]:
            fail("the live trace did not grow while the job ran (steps seen: %r)" % seen)
        if seen[-1] >= STEPS:
            fail("the live trace was only seen complete (steps seen: %r)" % seen)
        if glob.glob(os.path.join(out, "*.live.memscope")):
            fail("a live file was left behind: %r" % os.listdir(out))
        final = glob.glob(os.path.join(out, "memscope-*.memscope"))
        if len(final) != 1 or steps_in(cli, final[0]) != STEPS:
            fail("the final trace is not the whole run: %r" % final)
        own = [l for l in stdout.splitlines() if l.startswith("step ")]
        if len(own) != STEPS or "trained" not in stdout:
            fail("the job's own output changed:\n%s" % stdout)
        print("live steps seen: %r; final %d steps" % (seen, STEPS))

        for extra in (["--idle"], ["--no-python-hook"]):
            p = subprocess.run([cli, "record", "--live"] + extra + ["-o", os.path.join(tmp, "x"),
                                "--", py, "-c", "print('ran')"],
                               capture_output=True, text=True, timeout=60)
            if p.returncode != 1 or "ran" in p.stdout or "--live" not in p.stderr:
                fail("record --live %s was not refused before running: %d\n%s%s"
                     % (" ".join(extra), p.returncode, p.stdout, p.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
