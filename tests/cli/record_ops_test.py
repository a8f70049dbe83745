#!/usr/bin/env python3
"""Op scopes end to end: `memscope-cli record` on
record_scripts/train_linear_softmax.py, the trace checked through the core API
by memscope_record_ops_check.

usage: record_ops_test.py MEMSCOPE_CLI CHECKER CASE

  auto      the default (--ops auto): at::RecordFunction in the capture
            library; aten::addmm and aten::_softmax recorded, the Linear's
            output attributed to the matmul, the softmax's to aten::_softmax
  dispatch  --ops dispatch: the hook's TorchDispatchMode, the same checks
  off       --ops off: no op scopes

Skips (77) without a python3 that imports torch, and (auto) where the capture
library does not load into it.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import SKIP, Skip, fail, python_with_torch  # noqa: E402
SCRIPT = os.path.join(HERE, "record_scripts", "train_linear_softmax.py")


def record(cli, py, out, args):
    p = subprocess.run([cli, "record", "-o", out] + args + ["--", py, SCRIPT, "2"],
                       capture_output=True, text=True, timeout=240)
    if p.returncode != 0 or "trained 2 steps" not in p.stdout:
        fail("record %s exited %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    traces = [f for f in os.listdir(out) if f.endswith(".memscope")]
    if len(traces) != 1:
        fail("expected one trace in %s, found %s" % (out, os.listdir(out)))
    return os.path.join(out, traces[0]), p.stdout


def check(checker, trace, what):
    p = subprocess.run([checker, trace, what], capture_output=True, text=True, timeout=120)
    print(p.stdout, end="")
    if p.returncode != 0:
        fail("%s %s: exit %d\n%s" % (os.path.basename(checker), what, p.returncode, p.stderr))


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
    tmp = tempfile.mkdtemp(prefix="memscope-record-ops-")
    try:
        out = os.path.join(tmp, case)
        if case == "auto":
            trace, stdout = record(cli, py, out, [])
            if "ops            not recorded" in stdout:
                print("skipped: the capture library does not record ops here:\n" + stdout)
                return SKIP
            check(checker, trace, "recorded")
        elif case == "dispatch":
            trace, stdout = record(cli, py, out, ["--ops", "dispatch"])
            check(checker, trace, "recorded")
        elif case == "off":
            trace, stdout = record(cli, py, out, ["--ops", "off"])
            check(checker, trace, "none")
            if "MEMSCOPE_OPS=off" not in stdout:
                fail("record's report does not say ops were off:\n" + stdout)
        else:
            print(__doc__)
            return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok ", case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
