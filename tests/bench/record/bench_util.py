"""What the recording benchmarks share (imported from beside them)."""
import shutil
import subprocess


def torch_python():
    """The first python3 that imports torch (Debian's is /usr/bin/python3,
    which need not be first on PATH), or None."""
    for candidate in ("python3", "/usr/bin/python3"):
        try:
            if subprocess.run([candidate, "-c", "import torch"], capture_output=True,
                              timeout=120).returncode == 0:
                return shutil.which(candidate) or candidate
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None
