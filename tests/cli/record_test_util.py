"""What the `record` end-to-end tests share (not a test)."""
import os
import shutil
import subprocess
import sys

SKIP = 77


class Skip(Exception):
    """The case cannot run here; the message says why (exit 77)."""


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def python_with_torch():
    """The first python3 that imports torch (Debian's is /usr/bin/python3,
    which need not be first on PATH)."""
    for candidate in ("python3", "/usr/bin/python3"):
        try:
            if subprocess.run([candidate, "-c", "import torch"], capture_output=True,
                              timeout=120).returncode == 0:
                return shutil.which(candidate) or candidate
        except (OSError, subprocess.TimeoutExpired):
            pass
    raise Skip("no python3 with PyTorch (apt-get install python3-torch)")


def run_ok(cmd, timeout=300):
    """cmd's stdout; fails the test with its output when it exits non-zero."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        fail("%s exited %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def record_script(cli, out, command, timeout=300):
    """`memscope-cli record -o OUT -- COMMAND` for a script that prints
    "trained" when it finishes; the path of the one trace it leaves."""
    stdout = run_ok([cli, "record", "-o", out, "--"] + command, timeout)
    if "trained" not in stdout:
        fail("the script did not finish:\n%s" % stdout)
    traces = [f for f in os.listdir(out) if f.endswith(".memscope")]
    if len(traces) != 1:
        fail("expected one trace in %s, found %s" % (out, os.listdir(out)))
    return os.path.join(out, traces[0])
