"""What the `record` end-to-end tests share (not a test)."""
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
