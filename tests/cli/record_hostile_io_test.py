#!/usr/bin/env python3
"""Issue 64, classes 1, 2 and 8, end to end through `memscope-cli record`:
part files that are FIFOs or devices (refused, never waited on), symlinks
planted in the output folder (never followed, nothing outside written or
removed), and the hook's environment (refused up front, one line naming the
variable). Each run is bounded: a hang is a failure, not a stuck ctest.

usage: record_hostile_io_test.py MEMSCOPE_CLI CASE"""
import os
import shutil
import subprocess
import sys
import tempfile

DEADLINE = 15  # seconds: the bound for bad input
HOOK_JSON = ('{"format": "memscope-hook", "version": 2, "pid": 4242, "phases": [], '
             '"histories": [], "log": "log.jsonl", "cpu_events": {"file": "cpu-events.bin"}, '
             '"open_phases": []}')


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def run(cmd, env=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=DEADLINE,
                           env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fail("%s did not finish within %d s (blocked?)" % (" ".join(cmd), DEADLINE))
    print("$ %s -> %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def pid_folder(out):
    folder = os.path.join(out, ".memscope-hook", "4242")
    os.makedirs(folder, mode=0o700)
    os.chmod(os.path.dirname(folder), 0o700)
    return folder


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def merge_fifo(cli, tmp, part):
    out = os.path.join(tmp, "out")
    folder = pid_folder(out)
    if part != "hook.json":
        write(os.path.join(folder, "hook.json"), HOOK_JSON)
    fifo = os.path.join(folder, part)
    os.mkfifo(fifo)
    p = run([cli, "record", "--merge", out])
    if p.returncode in (0, 124):
        fail("merge of a FIFO %s exited %d" % (part, p.returncode))
    if fifo not in p.stderr or "pipe" not in p.stderr:
        fail("the error does not name the FIFO %s as a pipe" % fifo)
    if not os.path.exists(fifo):
        fail("the parts were not kept")


def merge_device_log(cli, tmp):
    out = os.path.join(tmp, "out")
    folder = pid_folder(out)
    write(os.path.join(folder, "hook.json"), HOOK_JSON)
    os.symlink("/dev/zero", os.path.join(folder, "log.jsonl"))
    p = run([cli, "record", "--merge", out])
    if p.returncode == 0 or "character device" not in p.stderr:
        fail("a log linked to /dev/zero was not refused as a device")


def merge_hook_symlink(cli, tmp):
    elsewhere = os.path.join(tmp, "elsewhere")
    os.makedirs(os.path.join(elsewhere, "4242"))
    write(os.path.join(elsewhere, "4242", "hook.json"), HOOK_JSON)
    write(os.path.join(elsewhere, "4242", "log.jsonl"), "")
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    os.symlink(elsewhere, os.path.join(out, ".memscope-hook"))
    p = run([cli, "record", "--merge", out])
    if p.returncode == 0:
        fail("a symlinked hook folder was merged")
    if "symlink" not in p.stderr:
        fail("the error does not say the hook folder is a symlink")
    if sorted(os.listdir(os.path.join(elsewhere, "4242"))) != ["hook.json", "log.jsonl"]:
        fail("the folder the symlink points at was changed: %s"
             % os.listdir(os.path.join(elsewhere, "4242")))
    if [f for f in os.listdir(out) if f.endswith(".memscope")]:
        fail("a trace was written from another folder's parts")


def record_hook_symlink(cli, tmp):
    elsewhere = os.path.join(tmp, "elsewhere")
    os.makedirs(elsewhere)
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    os.symlink(elsewhere, os.path.join(out, ".memscope-hook"))
    p = run([cli, "record", "-o", out, "--", sys.executable, "-c", "print('ran')"])
    if p.returncode != 1 or "symlink" not in p.stderr or "ran" in p.stdout:
        fail("record ran with a symlinked hook folder")
    if os.listdir(elsewhere):
        fail("something was written through the symlink: %s" % os.listdir(elsewhere))


def env_pyhook_missing(cli, tmp):
    p = run([cli, "record", "-o", os.path.join(tmp, "out"), "--", sys.executable, "-c",
             "print('ran')"], env={"MEMSCOPE_PYHOOK_DIR": "/nonexistent"})
    if p.returncode != 1 or "ran" in p.stdout:
        fail("record ran without the hook it was pointed at")
    if "MEMSCOPE_PYHOOK_DIR=/nonexistent: no such folder" not in p.stderr:
        fail("record did not say the hook folder is missing")
    if "torch" in p.stderr:
        fail("record blamed torch")


def env_steps_huge(cli, tmp):
    value = "0:99999999999999999999999"
    p = run([cli, "record", "-o", os.path.join(tmp, "out"), "--", sys.executable, "-c",
             "print('ran')"], env={"MEMSCOPE_STEPS": value})
    if p.returncode != 1 or "ran" in p.stdout:
        fail("record ran with a MEMSCOPE_STEPS the merge cannot take")
    if "MEMSCOPE_STEPS=%s: " % value not in p.stderr or len(p.stderr.strip().splitlines()) != 1:
        fail("not one line naming MEMSCOPE_STEPS")
    p = run([cli, "record", "--steps", value, "-o", os.path.join(tmp, "out"), "--",
             sys.executable, "-c", "print('ran')"])
    if p.returncode == 0 or "ran" in p.stdout:
        fail("--steps %s was taken" % value)


def main():
    cli, case = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="memscope-hostile-io-")
    try:
        if case.startswith("merge_fifo_"):
            merge_fifo(cli, tmp, {"log": "log.jsonl", "hook": "hook.json",
                                  "cpu": "cpu-events.bin"}[case[len("merge_fifo_"):]])
        else:
            globals()[case](cli, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
