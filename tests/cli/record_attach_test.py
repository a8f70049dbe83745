#!/usr/bin/env python3
"""`memscope-cli record --idle`, `attach`, `detach` and `top` end to end on a
plain PyTorch CPU script (record_scripts/train_follow.py: 0.1 s per step).

usage: record_attach_test.py MEMSCOPE_CLI CASE

  steps     attached at step >= 20 with `attach --steps 2`: the folder holds one
            trace of exactly two whole steps (zero_grad, forward, backward,
            optimizer) numbered as the job counts them, with the CPU tensors
            alive at the first step's start carried in; the job exits 0 and
            prints what it prints without memscope; `top --once` right after
            shows live bytes within 10% of the trace's at its end
  seconds   `attach --seconds 1`: one trace about a second long; a stale
            socket in the folder (its process gone) is removed
  detach    `attach` with no limit, ended by `memscope-cli detach DIR`
  interrupt `attach` with no limit, ended by SIGINT (Ctrl-C)
  exit      the job exits (sys.exit(0)) during a `--steps 100` window: a
            complete trace of the steps it ran, record and attach exit 0
  pid       attach by pid (sockets under $XDG_RUNTIME_DIR/memscope); a pid
            that runs no hook is refused with how to start it
  hostile   control messages that are not JSON, too long, unknown commands,
            unknown keys, bad values, a path as window id: each refused with
            an error; nothing starts; sockets 0600 in a 0700 folder
  idle      record --idle with no attach: no trace, nothing left behind, the
            job's exit code and output unchanged
  ddp       two DDP ranks (gloo, CPU) and their launcher: `attach --steps 2`
            ends when the ranks' windows end (the launcher runs no step), one
            trace per rank, the same two whole steps in each
  api       the in-process API without record (record_scripts/train_api.py):
            memscope.attachable() makes a socket, `with memscope.recording(OUT,
            steps=2)` and start()/stop() each leave one merged trace of whole
            steps, numbered from the first call

Skips (77) without a python3 that imports torch. Every wait is bounded.
"""
import json
import os
import signal
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import SKIP, Skip, fail, python_with_torch  # noqa: E402
SCRIPT = os.path.join(HERE, "record_scripts", "train_follow.py")


def env_without_xdg(xdg=None):
    env = dict(os.environ)
    env.pop("XDG_RUNTIME_DIR", None)
    if xdg:
        env["XDG_RUNTIME_DIR"] = xdg
    return env


class Job:
    """`record --idle -o OUT -- python train_follow.py ARGS` in the background."""

    def __init__(self, cli, py, out, args, env):
        self.out = out
        self.p = subprocess.Popen([cli, "record", "--idle", "-o", out, "--", py, SCRIPT] + args,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env)

    def finish(self, timeout=120):
        try:
            stdout, stderr = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            stdout, stderr = self.p.communicate()
            fail("the job did not end in %d s\n%s\n%s" % (timeout, stdout, stderr))
        return self.p.returncode, stdout, stderr

    def kill_later(self):
        pass

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate()


def sockets(folder):
    try:
        return [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".sock")]
    except OSError:
        return []


def request(path, data, timeout=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(data)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    finally:
        s.close()
    return json.loads(reply.decode())


def wait_for_step(folder, step, job, timeout=90):
    """The status of the job's one process once it has run `step` steps (its
    next step is numbered `step` or more)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if job.p.poll() is not None:
            fail("the job ended early:\n%s" % (job.p.communicate()[1]))
        for path in sockets(folder):
            try:
                st = request(path, b'{"cmd":"status"}\n')
            except (OSError, ValueError):
                continue
            if st.get("ok") and st.get("steps_done", 0) >= step:
                return path, st
        time.sleep(0.05)
    fail("the job did not reach step %d in %d s" % (step, timeout))


def run(cmd, timeout=90, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        fail("%s did not end in %d s (%s)" % (" ".join(cmd), timeout, e))


def traces(out):
    if not os.path.isdir(out):
        return []
    return sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".memscope"))


def summary(cli, trace):
    p = run([cli, "summary", "--json", trace], timeout=120)
    if p.returncode != 0:
        fail("summary failed: %s" % p.stderr)
    return json.loads(p.stdout)["files"][0]


def check_whole_steps(info, first, count, label):
    steps = info["steps"]
    numbers = [s["step"] for s in steps]
    if numbers != list(range(first, first + count)):
        fail("%s: steps %s, expected %s" % (label, numbers, list(range(first, first + count))))
    for s in steps:
        need = {"zero_grad", "forward", "backward", "optimizer"}
        if not need <= set(s["phases"]):
            fail("%s: step %d has phases %s" % (label, s["step"], sorted(s["phases"])))
    return steps


def job_lines(stdout):
    """The job's own output: record's report starts at "memscope: N trace"."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("memscope: "):
            return lines[:i]
    return lines


def plain_output(py, args):
    p = run([py, SCRIPT] + args, timeout=120)
    return p.returncode, p.stdout.splitlines()


def check_job(job, py, args, label):
    rc, stdout, stderr = job.finish()
    want_rc, want = plain_output(py, args)
    if rc != want_rc:
        fail("%s: record exited %d, the job alone %d\n%s" % (label, rc, want_rc, stderr))
    if job_lines(stdout) != want:
        fail("%s: the job's output changed:\n%s\n--- without memscope:\n%s"
             % (label, "\n".join(job_lines(stdout)), "\n".join(want)))
    for leftover in (".memscope-control", ".memscope-attach", ".memscope-hook"):
        if os.path.exists(os.path.join(job.out, leftover)):
            fail("%s: %s left in %s: %s" % (label, leftover, job.out, os.listdir(job.out)))
    return stdout, stderr


def case_steps(cli, py, tmp):
    out = os.path.join(tmp, "steps")
    args = ["70", "--sleep", "0.1"]
    job = Job(cli, py, out, args, env_without_xdg())
    try:
        _, st = wait_for_step(os.path.join(out, ".memscope-control"), 20, job)
        p = run([cli, "attach", out, "--steps", "2"])
        if p.returncode != 0:
            job.kill()
            fail("attach exited %d\n%s\n%s\njob: %s" % (p.returncode, p.stdout, p.stderr,
                                                        job.p.communicate()))
        # A frame between steps (the job sleeps there): what the trace's end
        # holds too.
        for _ in range(20):
            top = run([cli, "top", "--once", out], timeout=30)
            if "after-step" in top.stdout or top.returncode != 0:
                break
            time.sleep(0.02)
    finally:
        job.kill_later()
    check_job(job, py, args, "steps")
    found = traces(out)
    if len(found) != 1 or "-attach-" not in found[0]:
        fail("expected one window trace in %s, found %s" % (out, os.listdir(out)))
    info = summary(cli, found[0])
    first = info["steps"][0]["step"] if info["steps"] else -1
    if first < st["steps_done"]:
        fail("the window began at step %d, before step %d (the next step at attach)"
             % (first, st["steps_done"]))
    steps = check_whole_steps(info, first, 2, "attach --steps 2")
    host = info["devices"]["-1"]
    if host["first_time_us"] < steps[0]["start_us"] or host["last_time_us"] > steps[-1]["end_us"]:
        fail("events outside the two steps")
    params = (64 * 256 + 256 + 256 * 10 + 10) * 4
    if host["final_active_bytes"] < params:
        fail("final live %d B < the parameters' %d B: the state alive at the window's start "
             "is missing" % (host["final_active_bytes"], params))
    if top.returncode != 0:
        fail("top --once exited %d: %s" % (top.returncode, top.stderr))
    params = (64 * 256 + 256 + 256 * 10 + 10) * 4
    cats = [l for l in top.stdout.splitlines() if l.strip().startswith("categories:")]
    if not cats or "parameter" not in cats[0] or "optimizer_state" not in cats[0]:
        fail("top --once shows no categories:\n%s" % top.stdout)
    rows = [line.split() for line in top.stdout.splitlines() if line.split()
            and line.split()[0].isdigit()]
    if len(rows) != 1:
        fail("top --once: expected one process row:\n%s" % top.stdout)
    top_step = int(rows[0][2])
    top_live = parse_bytes(rows[0][4], rows[0][5])
    final = host["final_active_bytes"]
    if top_step < steps[-1]["step"]:
        fail("top shows step %d, before the window's last step %d" % (top_step,
                                                                      steps[-1]["step"]))
    if abs(top_live - final) > 0.1 * final:
        fail("top's live %d B is not within 10%% of the trace's %d B between steps"
             % (top_live, final))
    print("ok  attach --steps 2 after %d steps: steps %s, whole; top: step %d, live %d B "
          "(trace %d B)" % (st["steps_done"], [s["step"] for s in steps], top_step, top_live, final))


def parse_bytes(number, unit):
    scale = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
    return float(number) * scale[unit]


def dead_pid():
    """The pid of a process that has ended (and was reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def case_seconds(cli, py, tmp):
    out = os.path.join(tmp, "seconds")
    args = ["60", "--sleep", "0.1"]
    job = Job(cli, py, out, args, env_without_xdg())
    folder = os.path.join(out, ".memscope-control")
    wait_for_step(folder, 5, job)
    # A stale socket (its process gone, nobody listening): skipped and removed.
    stale = os.path.join(folder, "%d.sock" % dead_pid())
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(stale)
    s.close()
    began = time.time()
    p = run([cli, "attach", out, "--seconds", "1"])
    if os.path.exists(stale):
        fail("the stale socket %s was not removed" % stale)
    took = time.time() - began
    if p.returncode != 0:
        fail("attach --seconds exited %d\n%s" % (p.returncode, p.stderr))
    check_job(job, py, args, "seconds")
    found = traces(out)
    if len(found) != 1:
        fail("expected one trace, found %s" % os.listdir(out))
    info = summary(cli, found[0])
    if not 3 <= len(info["steps"]) <= 15 or took > 10:
        fail("a 1 s window holds %d steps and attach took %.1f s" % (len(info["steps"]), took))
    print("ok  attach --seconds 1: %d steps, attach took %.1f s" % (len(info["steps"]), took))


def case_detach(cli, py, tmp, interrupt=False):
    label = "interrupt" if interrupt else "detach"
    out = os.path.join(tmp, label)
    args = ["60", "--sleep", "0.1"]
    job = Job(cli, py, out, args, env_without_xdg())
    wait_for_step(os.path.join(out, ".memscope-control"), 5, job)
    attach = subprocess.Popen([cli, "attach", out], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    if interrupt:
        attach.send_signal(signal.SIGINT)
    else:
        d = run([cli, "detach", out], timeout=30)
        if d.returncode != 0 or "1 window stopped" not in d.stderr:
            fail("detach exited %d: %s" % (d.returncode, d.stderr))
    try:
        stdout, stderr = attach.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        attach.kill()
        fail("attach did not end after %s" % label)
    if attach.returncode != 0:
        fail("attach exited %d after %s\n%s" % (attach.returncode, label, stderr))
    check_job(job, py, args, label)
    found = traces(out)
    if len(found) != 1:
        fail("expected one trace, found %s" % os.listdir(out))
    info = summary(cli, found[0])
    if len(info["steps"]) < 3:
        fail("%s: the window holds %d steps" % (label, len(info["steps"])))
    print("ok  attach ended by %s: %d steps" % (label, len(info["steps"])))


def case_exit(cli, py, tmp):
    out = os.path.join(tmp, "exit")
    args = ["60", "--sleep", "0.1", "--exit-at", "30"]
    job = Job(cli, py, out, args, env_without_xdg())
    _, st = wait_for_step(os.path.join(out, ".memscope-control"), 20, job)
    p = run([cli, "attach", out, "--steps", "100"])
    if p.returncode != 0:
        fail("attach exited %d\n%s" % (p.returncode, p.stderr))
    check_job(job, py, args, "exit")
    found = traces(out)
    if len(found) != 1:
        fail("expected one trace, found %s" % os.listdir(out))
    info = summary(cli, found[0])
    numbers = [s["step"] for s in info["steps"]]
    if not numbers or numbers[-1] < 29 or numbers[0] < st["steps_done"]:
        fail("steps %s for a job that ran to step 30 (attached after %d)"
             % (numbers, st["steps_done"]))
    check_whole_steps(info, numbers[0], 30 - numbers[0], "exit")
    print("ok  the job exited mid-window: steps %d-%d recorded" % (numbers[0], numbers[-1]))


def case_pid(cli, py, tmp):
    xdg = os.path.join(tmp, "xdg")
    os.mkdir(xdg, 0o700)
    out = os.path.join(tmp, "pid")
    args = ["60", "--sleep", "0.1"]
    job = Job(cli, py, out, args, env_without_xdg(xdg))
    path, st = wait_for_step(os.path.join(xdg, "memscope"), 5, job)
    if os.path.exists(os.path.join(out, ".memscope-control")):
        fail("with $XDG_RUNTIME_DIR the socket belongs under it, not in the output folder")
    env = env_without_xdg(xdg)
    p = run([cli, "attach", str(st["pid"]), "--steps", "1"], env=env)
    if p.returncode != 0:
        fail("attach PID exited %d\n%s" % (p.returncode, p.stderr))
    # A process with no hook: said so, with how to start one.
    other = subprocess.Popen(["sleep", "30"])
    try:
        q = run([cli, "attach", str(other.pid), "--steps", "1"], env=env)
    finally:
        other.kill()
        other.wait()
    if q.returncode != 2 or "record --idle" not in q.stderr:
        fail("attach to a pid without a hook: exit %d, %s" % (q.returncode, q.stderr))
    check_job(job, py, args, "pid")
    if sockets(os.path.join(xdg, "memscope")):
        fail("the socket outlived its process: %s" % sockets(os.path.join(xdg, "memscope")))
    found = traces(out)
    if len(found) != 1:
        fail("expected one trace, found %s" % os.listdir(out))
    info = summary(cli, found[0])
    check_whole_steps(info, info["steps"][0]["step"], 1, "attach PID --steps 1")
    print("ok  attach %d --steps 1; a pid without hook: %s" % (st["pid"],
                                                              q.stderr.strip()[:100]))


HOSTILE = [
    b"hello\n",
    b"\xff\xfe\x00garbage\n",
    b"[1, 2, 3]\n",
    b'"status"\n',
    b'{"cmd": "exec", "args": "rm -rf /"}\n',
    b'{"cmd": "__import__"}\n',
    b'{"cmd": "start"}\n',
    b'{"cmd": "start", "window": "../../../tmp/x", "steps": 1}\n',
    b'{"cmd": "start", "window": "/etc", "seconds": 1}\n',
    b'{"cmd": "start", "window": "ok", "steps": -1}\n',
    b'{"cmd": "start", "window": "ok", "steps": true}\n',
    b'{"cmd": "start", "window": "ok", "steps": 1e300}\n',
    b'{"cmd": "start", "window": "ok", "seconds": "1"}\n',
    b'{"cmd": "start", "window": "ok", "steps": 1, "seconds": 1}\n',
    b'{"cmd": "start", "window": "ok", "steps": 1, "path": "/tmp"}\n',
    b'{"cmd": "status", "x": 1}\n',
    b'{"cmd": "stop", "now": true}\n',
    b'{"cmd": "status"' + b" " * 5000 + b"}\n",
    b"x" * 100000,
    b'{"cmd": ' + b"[" * 3000 + b"]" * 3000 + b"}\n",
    b'{"cmd": ' + b"[" * 2000 + b"]" * 2000 + b"}\n",
    b'{"cmd": "status", "cmd": "start", "window": "dup", "steps": 1}\n',
]


def case_hostile(cli, py, tmp):
    out = os.path.join(tmp, "hostile")
    args = ["50", "--sleep", "0.05"]
    job = Job(cli, py, out, args, env_without_xdg())
    folder = os.path.join(out, ".memscope-control")
    path, _ = wait_for_step(folder, 2, job)
    mode = stat.S_IMODE(os.lstat(folder).st_mode)
    sock_mode = stat.S_IMODE(os.lstat(path).st_mode)
    if mode != 0o700 or sock_mode != 0o600:
        fail("control folder %o, socket %o (want 700, 600)" % (mode, sock_mode))
    for data in HOSTILE:
        try:
            reply = request(path, data, timeout=10)
        except (OSError, ValueError) as exc:
            fail("%r: no JSON answer (%s)" % (data[:60], exc))
        if reply.get("ok") is not False or "refused" not in reply.get("error", ""):
            fail("%r was not refused: %s" % (data[:60], reply))
    # A connection that sends nothing is dropped after the read timeout; the
    # server still answers afterwards.
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(path)
    st = request(path, b'{"cmd":"status"}\n', timeout=10)
    idle.close()
    if not st.get("ok") or st.get("window") is not None:
        fail("after the hostile messages: %s" % st)
    check_job(job, py, args, "hostile")
    if traces(out):
        fail("a hostile message recorded something: %s" % os.listdir(out))
    print("ok  %d hostile messages refused; folder 0700, socket 0600" % len(HOSTILE))


def case_idle(cli, py, tmp):
    out = os.path.join(tmp, "idle")
    args = ["10", "--sleep", "0"]
    job = Job(cli, py, out, args, env_without_xdg())
    _, stderr = check_job(job, py, args, "idle")
    if os.path.exists(out):
        fail("record --idle with no window left %s: %s" % (out, os.listdir(out)))
    if "no window was recorded" not in stderr:
        fail("record --idle does not say that nothing was recorded:\n%s" % stderr)
    print("ok  record --idle alone: no trace, nothing left, output unchanged")


def case_ddp(cli, py, tmp):
    out = os.path.join(tmp, "ddp")
    script = os.path.join(HERE, "record_scripts", "train_ddp.py")
    job = subprocess.Popen([cli, "record", "--idle", "-o", out, "--", py, script, "--launch", "2",
                            "--steps", "400"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env_without_xdg())
    holder = Job.__new__(Job)
    holder.out, holder.p = out, job
    try:
        wait_for_step(os.path.join(out, ".memscope-control"), 20, holder, timeout=120)
        began = time.time()
        p = run([cli, "attach", out, "--steps", "2"])
        took = time.time() - began
        if p.returncode != 0:
            fail("attach exited %d\n%s" % (p.returncode, p.stderr))
        if job.poll() is not None or took > 30:
            fail("attach ended after %.1f s, with the job %s" % (
                took, "ended" if job.poll() is not None else "running"))
    finally:
        rc, stdout, stderr = holder.finish(timeout=300)
    if rc != 0:
        fail("the DDP job exited %d\n%s" % (rc, stderr))
    found = traces(out)
    if len(found) != 2 or not all("-rank%d-" % r in found[r] for r in (0, 1)):
        fail("expected one trace per rank, found %s" % os.listdir(out))
    numbers = []
    for trace in found:
        info = summary(cli, trace)
        first = info["steps"][0]["step"] if info["steps"] else -1
        numbers.append([s["step"] for s in check_whole_steps(info, first, 2, trace)])
    if numbers[0] != numbers[1]:
        fail("the ranks recorded different steps: %s" % numbers)
    print("ok  DDP: attach --steps 2 took %.1f s; both ranks recorded steps %s" % (took,
                                                                                numbers[0]))


def case_api(cli, py, tmp):
    out = os.path.join(tmp, "api")
    hook = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(cli)), "..", "share",
                                         "memscope", "pyhook"))
    env = env_without_xdg()
    env["PYTHONPATH"] = hook
    env["MEMSCOPE_CLI"] = os.path.abspath(cli)
    p = run([py, os.path.join(HERE, "record_scripts", "train_api.py"), out], env=env,
            timeout=120)
    if p.returncode != 0 or "trained" not in p.stdout:
        fail("train_api.py exited %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    lines = p.stdout.splitlines()
    sock = [l.split(" ", 1)[1] for l in lines if l.startswith("socket ")]
    if not sock or not sock[0].endswith(".sock"):
        fail("attachable() made no socket: %s\n%s" % (lines, p.stderr))
    written = [l.split(" ", 1)[1] for l in lines if l.startswith("trace ")]
    if len(written) != 2 or sorted(written) != traces(out):
        fail("expected the two traces printed to be the folder's: %s vs %s"
             % (written, os.listdir(out)))
    check_whole_steps(summary(cli, written[0]), 3, 2, "recording(steps=2)")
    check_whole_steps(summary(cli, written[1]), 7, 2, "start()/stop()")
    leftovers = [f for f in os.listdir(out) if f.startswith(".")]
    if leftovers:
        fail("left in %s: %s" % (out, leftovers))
    print("ok  in-process API: recording(steps=2) -> steps 3-4, start/stop -> steps 7-8")


CASES = {"steps": case_steps, "seconds": case_seconds, "detach": case_detach,
         "interrupt": lambda c, p, t: case_detach(c, p, t, interrupt=True),
         "exit": case_exit, "pid": case_pid, "hostile": case_hostile, "idle": case_idle,
         "api": case_api, "ddp": case_ddp}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__)
        return 2
    cli, case = sys.argv[1], sys.argv[2]
    try:
        py = python_with_torch()
    except Skip as e:
        print("SKIP:", e)
        return SKIP
    tmp = tempfile.mkdtemp(prefix="memscope-attach-")
    try:
        CASES[case](cli, py, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
