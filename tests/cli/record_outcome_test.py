#!/usr/bin/env python3
"""What `memscope-cli record` says and returns when something is missing.

usage: record_outcome_test.py MEMSCOPE_CLI CASE

  isolated, ignore_environment, no_site    python3 -I / -E / -S: the hook cannot load
  pythonpath_env, pythonpath_sh            a wrapper resets PYTHONPATH
  environment_cleared                      env -i
  idle_torch                               the hook loads, torch is imported, nothing trains
  no_torch                                 nothing imports torch: which processes ran
  merge_usage                              record --merge on a missing / empty folder, with a command
  read_only                                an output folder on a read-only mount: refused up front
  disk_full                                the disk fills before the merge: one message, exit 3,
                                           then record --merge finishes it

Skips (77), saying why, without a python3 that imports torch (the cases that
run one) or where no file system can be mounted (read_only, disk_full: they
mount a tmpfs, in a private mount namespace when `unshare` can make one).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import SKIP, Skip, fail, python_with_torch  # noqa: E402
TRAIN = os.path.join(HERE, "record_scripts", "train_checkpoint_adam.py")
IDLE = os.path.join(HERE, "..", "pyhook", "scripts", "idle_torch.py")


def record(cli, args, env=None, timeout=120):
    p = subprocess.run([cli, "record"] + args, capture_output=True, text=True, timeout=timeout,
                       env=env)
    print("$ memscope-cli record", " ".join(args), "->", p.returncode)
    print(p.stdout)
    print(p.stderr, file=sys.stderr)
    return p


def expect_in(text, needle, what):
    if needle not in text:
        fail(f"{what}: {needle!r} not in:\n{text}")


def expect_not_in(text, needle, what):
    if needle in text:
        fail(f"{what}: {needle!r} should not be in:\n{text}")


def traces(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".memscope")) \
        if os.path.isdir(folder) else []


# ------------------------------------------------------------ the hook kept out

def not_recorded(cli, tmp, command, cause, env=None):
    """The command trains, but its python has no hook: nothing recorded, the
    message names the process and the cause, the job's exit code stands."""
    out = os.path.join(tmp, "runs")
    p = record(cli, ["-o", out, "--"] + command, env=env)
    if p.returncode != 0:
        fail(f"exit {p.returncode}, expected the job's 0")
    expect_in(p.stdout, "trained 1 steps", "the job's own output")
    if traces(out):
        fail(f"expected no trace, found {traces(out)}")
    expect_in(p.stderr, "nothing was recorded", "the summary line")
    expect_in(p.stderr, "imported torch but was not recorded", "the explanation")
    expect_in(p.stderr, cause, "the cause")
    expect_not_in(p.stderr, "no process of the command imported torch", "a wrong claim")
    return p


def hook_fix_lines(stderr):
    expect_in(stderr, 'import sys; sys.path.insert(0, "', "the fix")
    expect_in(stderr, "import memscope_hook; memscope_hook.activate()", "the fix")


def case_isolated(cli, tmp):
    py = python_with_torch()
    p = not_recorded(cli, tmp, [py, "-I", TRAIN, "1"], "started with -I (isolated mode)")
    hook_fix_lines(p.stderr)
    # The fix it gives works: the two lines at the top of the script.
    lines = [l.strip() for l in p.stderr.splitlines() if l.strip().startswith("import ")]
    fixed = os.path.join(tmp, "fixed.py")
    with open(fixed, "w") as f:
        f.write("\n".join(lines) + "\nimport runpy, sys\nsys.argv = ['train', '1']\n"
                f"runpy.run_path({TRAIN!r}, run_name='__main__')\n")
    out = os.path.join(tmp, "fixed-runs")
    q = record(cli, ["-o", out, "--", py, "-I", fixed])
    if q.returncode != 0 or len(traces(out)) != 1:
        fail(f"the suggested lines did not record the run: exit {q.returncode}, {traces(out)}")


def case_ignore_environment(cli, tmp):
    p = not_recorded(cli, tmp, [python_with_torch(), "-u", "-E", TRAIN, "1"],
                     "started with -E, which ignores PYTHONPATH")
    hook_fix_lines(p.stderr)


def case_no_site(cli, tmp):
    py = python_with_torch()
    # Without the site module Debian's dist-packages is not on sys.path: the
    # user's PYTHONPATH puts torch back, as it must for -S to import torch.
    torch_parent = subprocess.run(
        [py, "-c", "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
        capture_output=True, text=True).stdout.strip()
    env = dict(os.environ, PYTHONPATH=torch_parent)
    p = not_recorded(cli, tmp, [py, "-S", TRAIN, "1"], "started with -S, which skips the site",
                     env=env)
    hook_fix_lines(p.stderr)


def case_pythonpath_env(cli, tmp):
    p = not_recorded(cli, tmp, ["env", "PYTHONPATH=", python_with_torch(), TRAIN, "1"],
                     "PYTHONPATH was reset by the script or a wrapper (it is \"\"")
    hook_fix_lines(p.stderr)


def case_pythonpath_sh(cli, tmp):
    py = python_with_torch()
    p = not_recorded(cli, tmp, ["sh", "-c", f"PYTHONPATH=/nowhere {py} {TRAIN} 1; exit $?"],
                     "PYTHONPATH was reset by the script or a wrapper (it is \"/nowhere\"")
    hook_fix_lines(p.stderr)


def case_environment_cleared(cli, tmp):
    p = not_recorded(cli, tmp, ["env", "-i", python_with_torch(), TRAIN, "1"],
                     "its environment was cleared (MEMSCOPE_HOOK=1 is not set")
    expect_in(p.stderr, 'os.environ.setdefault("MEMSCOPE_OUTPUT_DIR", "', "the fix")


def case_idle_torch(cli, tmp):
    out = os.path.join(tmp, "runs")
    # As in a build without LibTorch: no CPU capture library, so importing
    # torch and computing records nothing.
    env = dict(os.environ, MEMSCOPE_TORCH_CAPTURE_LIBRARY=os.path.join(tmp, "absent.so"))
    p = record(cli, ["-o", out, "--", python_with_torch(), IDLE], env=env)
    if p.returncode != 0:
        fail(f"exit {p.returncode}")
    if traces(out):
        fail(f"expected no trace, found {traces(out)}")
    expect_in(p.stderr, "nothing was recorded", "the summary line")
    expect_in(p.stderr, "the hook was loaded, but there was nothing to record", "the cause")
    expect_in(p.stderr, "no training step ran", "the cause")
    expect_not_in(p.stderr, "no process of the command imported torch", "a wrong claim")


def case_no_torch(cli, tmp):
    out = os.path.join(tmp, "runs")
    py = shutil.which("python3") or "/usr/bin/python3"
    # A wrapper, and a python that lives long enough to be seen.
    p = record(cli, ["-o", out, "--", "sh", "-c",
                     f"{py} -c 'import time; time.sleep(0.6)'; echo done"])
    if p.returncode != 0:
        fail(f"exit {p.returncode}")
    expect_in(p.stderr, "nothing was recorded: no process of the command imported torch",
              "the summary line")
    expect_in(p.stderr, "What ran:", "the list")
    expect_in(p.stderr, f"{py} -c \"import time; time.sleep(0.6)\"", "the python that ran")
    if os.path.exists(out):
        fail("an empty output folder was left behind")


def case_merge_usage(cli, tmp):
    p = record(cli, ["--merge", os.path.join(tmp, "absent")])
    if p.returncode != 2:
        fail(f"--merge on a missing folder: exit {p.returncode}, expected 2")
    expect_in(p.stderr, os.path.join(tmp, "absent") + " does not exist", "the message")
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    p = record(cli, ["--merge", empty])
    if p.returncode != 2:
        fail(f"--merge on an empty folder: exit {p.returncode}, expected 2")
    expect_in(p.stderr, "nothing to merge in " + empty, "the message")
    p = record(cli, ["--merge", empty, "--", "true"])
    if p.returncode != 2:
        fail(f"--merge with a command: exit {p.returncode}, expected 2")
    expect_in(p.stderr, "give it no command and no -o", "the message")
    p = record(cli, ["--merge", empty, "-o", empty])
    if p.returncode != 2:
        fail(f"--merge with -o: exit {p.returncode}, expected 2")
    p = record(cli, [])
    if p.returncode != 1:
        fail(f"record without a command: exit {p.returncode}, expected 1 (as before)")
    p = record(cli, ["--help"])
    expect_in(p.stdout, "Exit codes:", "--help")
    expect_in(p.stdout, "record --merge DIR", "--help")


# ------------------------------------------------------------ mounts

def in_private_mounts():
    """Re-runs this test in a mount namespace of its own when `unshare` can
    make one (its mounts go with it, whatever happens); returns the exit code
    then, None to go on here."""
    if os.environ.get("MEMSCOPE_TEST_MOUNT_NS") or not shutil.which("unshare"):
        return None
    flags = "-m" if os.geteuid() == 0 else "-rm"
    if subprocess.run(["unshare", flags, "true"], capture_output=True).returncode != 0:
        return None
    env = dict(os.environ, MEMSCOPE_TEST_MOUNT_NS="1")
    return subprocess.run(["unshare", flags, "--propagation", "private", sys.executable,
                           os.path.abspath(__file__)] + sys.argv[1:], env=env).returncode


def mount_tmpfs(where, options):
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", where],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip(f"cannot mount a tmpfs ({p.stderr.strip() or 'mount failed'}): "
                   "these cases need root or an unprivileged mount namespace")


def umount(where):
    subprocess.run(["umount", "-l", where], capture_output=True)


def case_read_only(cli, tmp):
    mnt = os.path.join(tmp, "ro")
    os.makedirs(mnt)
    mount_tmpfs(mnt, "ro,size=1m")
    try:
        marker = os.path.join(tmp, "job-ran")
        job = ["sh", "-c", f"touch {marker}"]
        p = record(cli, ["-o", mnt, "--"] + job)
        if p.returncode != 1:
            fail(f"exit {p.returncode}, expected 1 (the job not run)")
        expect_in(p.stderr, f"cannot write to the folder {mnt}: Read-only file system",
                  "the message")
        if os.path.exists(marker):
            fail("the job ran although its recording could not be written")
        sub = os.path.join(mnt, "runs")
        p = record(cli, ["-o", sub, "--"] + job)
        if p.returncode != 1:
            fail(f"exit {p.returncode}, expected 1")
        expect_in(p.stderr, f"cannot create the output folder {sub}: Read-only file system",
                  "the message")
        if os.path.exists(marker):
            fail("the job ran although its output folder could not be made")
    finally:
        umount(mnt)


def case_disk_full(cli, tmp):
    py = python_with_torch()
    mnt = os.path.join(tmp, "small")
    os.makedirs(mnt)
    mount_tmpfs(mnt, "size=16m")
    try:
        out = os.path.join(mnt, "runs")
        filler = os.path.join(mnt, "filler")
        # The job trains (its hook writes its parts at exit), then fills the
        # disk: the merge that follows has no room.
        def job(code):
            return ["sh", "-c", f"{py} {TRAIN} 1 && {{ head -c 64M /dev/zero > {filler}; "
                                f"exit {code}; }}"]
        p = record(cli, ["-o", out, "--"] + job(0))
        if p.returncode != 3:
            fail(f"exit {p.returncode}, expected 3 (the job exited 0, the recording failed)")
        expect_in(p.stdout, "trained 1 steps", "the job ran unharmed")
        err = p.stderr
        if err.count("memscope-cli record:") != 1:
            fail(f"expected one message from record, got:\n{err}")
        expect_in(err, "the recording could not be finished", "the message")
        expect_in(err, "No space left on device", "the reason")
        expect_in(err, "the parts of process ", "what was kept")
        expect_in(err, os.path.join(out, ".memscope-hook") + "/", "where it was kept")
        expect_in(err, f"once there is room on the disk: memscope-cli record --merge {out}",
                  "how to finish")
        expect_not_in(err, "nothing was recorded", "a wrong claim")
        if traces(out):
            fail(f"no trace should have been written: {traces(out)}")

        # A job that failed keeps its own exit code.
        os.remove(filler)
        p = record(cli, ["-o", out, "--"] + job(5))
        if p.returncode != 5:
            fail(f"exit {p.returncode}, expected the job's 5")
        expect_in(p.stderr, "the recording could not be finished", "the message")

        # Room again: --merge finishes both runs' parts.
        os.remove(filler)
        p = record(cli, ["--merge", out])
        if p.returncode != 0:
            fail(f"--merge: exit {p.returncode}")
        found = traces(out)
        if len(found) != 2:
            fail(f"expected two traces after --merge, found {found}")
        expect_in(p.stdout, f"memscope: 2 traces in {out}", "the summary")
        expect_in(p.stdout, "phase names    step 0", "the summary of a trace")
        if os.path.exists(os.path.join(out, ".memscope-hook")):
            fail("the parts were left behind after --merge")
        p = record(cli, ["--merge", out])
        if p.returncode != 2:
            fail(f"a second --merge: exit {p.returncode}, expected 2 (nothing to merge)")
    finally:
        umount(mnt)


def case_disk_fills_mid_job(cli, tmp):
    py = python_with_torch()
    loops = os.path.join(HERE, "..", "pyhook", "scripts", "loops.py")
    mnt = os.path.join(tmp, "small")
    os.makedirs(mnt)
    mount_tmpfs(mnt, "size=8m")
    try:
        out = os.path.join(mnt, "runs")
        filler = os.path.join(mnt, "filler")
        # The disk fills after 3 of 8 steps; the job trains on.
        p = record(cli, ["-o", out, "--", py, loops, "zero_grad_end", "8", "--fill",
                         filler + ":3"])
        expect_in(p.stdout, "trained 8 steps", "the job ran to its end unharmed")
        if p.returncode != 3:
            fail(f"exit {p.returncode}, expected 3 (the job exited 0, the recording failed)")
        expect_in(p.stderr, "the recording could not be finished", "the message")
        expect_in(p.stderr, f"memscope-cli record --merge {out}", "how to finish")
        expect_not_in(p.stderr, "nothing was recorded", "a wrong claim")
        os.remove(filler)
        p = record(cli, ["--merge", out])
        if p.returncode != 0:
            fail(f"--merge: exit {p.returncode}")
        expect_in(p.stdout, "phase names    step 0", "the steps written before the disk filled")
    finally:
        umount(mnt)


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}
MOUNTING = {"read_only", "disk_full", "disk_fills_mid_job"}


def main():
    cli, case = sys.argv[1], sys.argv[2]
    if case not in CASES:
        fail(f"unknown case {case}; known: {sorted(CASES)}")
    if case in MOUNTING:
        code = in_private_mounts()
        if code is not None:
            return code
    try:
        with tempfile.TemporaryDirectory() as tmp:
            CASES[case](os.path.abspath(cli), tmp)
    except Skip as why:
        print("SKIP:", why)
        return SKIP
    print("PASS:", case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
