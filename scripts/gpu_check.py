#!/usr/bin/env python3
"""GPU check of `memscope-cli record` (docs/GPU_CHECK.md).

Runs plain PyTorch workloads (scripts/gpu_check_workload.py) with and without
`memscope-cli record`, compares what memscope recorded with what PyTorch
measured, and prints a PASS/FAIL table. With --fake it runs on the CPU: the
checks that need CUDA say SKIP, the rest (phases, torch.profiler detection,
SIGTERM) run for real. Exit code: 0 when nothing failed.
"""

import argparse
import glob
import json
import os
import pickle
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "gpu_check_workload.py")
GIB = 1 << 30


class Check:
    def __init__(self, work, cli, python, fake, timeout):
        self.work, self.cli, self.python, self.fake, self.timeout = work, cli, python, fake, timeout
        self.rows = []

    # --- running things -------------------------------------------------
    def run(self, name, cmd, env=None):
        """Runs cmd; output to WORK/name.txt. Returns (exit code, output, seconds)."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env["PYTHONUNBUFFERED"] = "1"
        start = time.monotonic()
        try:
            p = subprocess.run(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=self.timeout, text=True, errors="replace")
            rc, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, out = 124, (e.stdout or "") if isinstance(e.stdout, str) else ""
        seconds = time.monotonic() - start
        with open(os.path.join(self.work, name + ".txt"), "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
        print(f"  {name:<22} exit {rc:<4} {seconds:6.1f} s", flush=True)
        return rc, out, seconds

    def workload(self, mode, result, *extra):
        device = ["--device", "cpu"] if self.fake else []
        small = (["--layers", "2", "--hidden", "64", "--batch", "4", "--seq", "32",
                  "--steps", "6", "--warmup", "2"] if self.fake else [])
        return [self.python, WORKLOAD, mode, "--result", result] + device + small + list(extra)

    def record(self, name, mode, *extra, env=None, record_args=()):
        out_dir = os.path.join(self.work, name)
        result = os.path.join(self.work, name + ".json")
        cmd = [self.cli, "record", "-o", out_dir, *record_args, "--"] + self.workload(mode, result, *extra)
        rc, out, seconds = self.run(name, cmd, env)
        return rc, out, out_dir, load(result)

    def summary(self, out_dir):
        traces = sorted(glob.glob(os.path.join(out_dir, "*.memscope")))
        if len(traces) != 1:
            return None, f"{len(traces)} traces in {out_dir}"
        p = subprocess.run([self.cli, "summary", "--json", traces[0]], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            return None, f"summary failed: {p.stderr.strip()}"
        return json.loads(p.stdout)["files"][0], traces[0]

    # --- the table --------------------------------------------------------
    def row(self, name, ok, detail):
        status = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
        self.rows.append((name, status, detail))
        print(f"  -> {name}: {status}: {detail}", flush=True)

    def skip(self, name, why="needs a GPU (--fake)"):
        self.row(name, None, why)

    # --- the checks -------------------------------------------------------
    def smoke(self, name, record_args, clock_row):
        rc, out, out_dir, result = self.record(name, "smoke", record_args=record_args)
        file, where = self.summary(out_dir)
        if not file or not result:
            self.row(name, False, f"record exit {rc}; {where}")
            self.row(clock_row, False, "no trace")
            return
        trace = where
        pickle_path = os.path.join(self.work, name + ".pickle")
        subprocess.run([self.cli, "convert", trace, pickle_path], check=False,
                       stdout=subprocess.DEVNULL)
        try:
            with open(pickle_path, "rb") as f:
                snap = pickle.load(f)  # our own export of our own trace
        except (OSError, pickle.UnpicklingError) as e:
            self.row(name, False, f"cannot read the exported snapshot: {e}")
            return
        entries = [e for dev in snap.get("device_traces", []) for e in dev]
        allocs = [e for e in entries if e.get("action") == "segment_alloc" and e.get("size") == GIB]
        frees = [e for e in entries if e.get("action") == "segment_free" and e.get("size") == GIB]
        self.row(name, len(allocs) == 1 and len(frees) == 1,
                 f"{len(allocs)} segment alloc and {len(frees)} segment free of 1 GiB")
        if allocs and "time_us" in allocs[0]:
            t = allocs[0]["time_us"] * 1000
            lo, hi = result["before_ns"], result["after_alloc_ns"]
            slack = 2_000_000
            self.row(clock_row, lo - slack <= t <= hi + slack,
                     f"segment alloc at {(t - lo) / 1e6:+.3f} ms from the Python clock before the "
                     f"call; the call took {(hi - lo) / 1e6:.3f} ms")
        else:
            self.row(clock_row, False, "no timed 1 GiB segment alloc")

    def training(self):
        extra = ["--checkpoint"]
        plain, recorded = [], []
        last = None
        for i in range(2):
            rc, _, _ = self.run(f"plain-{i}", self.workload("train", os.path.join(self.work, f"plain-{i}.json"), *extra))
            r = load(os.path.join(self.work, f"plain-{i}.json"))
            if rc == 0 and r:
                plain.append(r["step_time_median_s"])
            rc, out, out_dir, r = self.record(f"recorded-{i}", "train", *extra)
            if rc == 0 and r:
                recorded.append(r["step_time_median_s"])
                last = (out_dir, r)
        if not last:
            for row in ("tensor peak", "reserved peak", "phases", "overhead"):
                self.row(row, False, "the recorded run failed (see recorded-*.txt)")
            return
        out_dir, r = last
        file, where = self.summary(out_dir)
        if not file:
            for row in ("tensor peak", "reserved peak", "phases"):
                self.row(row, False, where)
        else:
            dev = file["devices"].get("-1" if self.fake else "0", {})
            if self.fake:
                self.skip("tensor peak")
                self.skip("reserved peak")
            else:
                self.row("tensor peak", *within(dev.get("peak_active_bytes"), r["max_memory_allocated"], 0.01))
                self.row("reserved peak", *within(dev.get("peak_reserved_bytes"), r["max_memory_reserved"], 0.01))
            steps = file.get("steps", [])
            complete = [s for s in steps if {"forward", "backward", "optimizer"} <= set(s["phases"])]
            recompute = sum(1 for s in steps if "recompute" in s["phases"])
            self.row("phases", len(steps) == r["steps"] and len(complete) == len(steps),
                     f"{len(complete)} of {len(steps)} steps have forward, backward and optimizer "
                     f"({r['steps']} run); {recompute} with recompute")
        if plain and recorded:
            base, traced = min(plain), min(recorded)
            overhead = traced / base - 1
            detail = (f"median step {traced * 1e3:.2f} ms recorded vs {base * 1e3:.2f} ms plain: "
                      f"{overhead * 100:+.2f}% (best of {len(plain)} runs each)")
            self.row("overhead", None if self.fake else overhead <= 0.03,
                     detail if not self.fake else detail + "; CPU, not gated")
        else:
            self.row("overhead", False, "a run failed")

    def expandable(self):
        env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
        rc, out, out_dir, r = self.record("expandable", "train", "--steps", "12", "--warmup", "2", env=env)
        file, where = self.summary(out_dir)
        if not file or not r:
            self.row("expandable segments", False, f"record exit {rc}; {where}")
            return
        dev = file["devices"].get("0", {})
        ok, detail = within(dev.get("peak_active_bytes"), r["max_memory_allocated"], 0.01)
        ok2, detail2 = within(dev.get("peak_reserved_bytes"), r["max_memory_reserved"], 0.01)
        self.row("expandable segments", ok and ok2, f"tensor {detail}; reserved {detail2}")

    def profiler(self):
        steps = ["--steps", "6", "--warmup", "2"] if self.fake else ["--steps", "12", "--warmup", "2"]
        rc, out, out_dir, r = self.record("profiler", "train", "--profile-at", "3", *steps)
        file, where = self.summary(out_dir)
        said = "torch.profiler started" in out
        warned = bool(file) and any("took CUPTI over" in w["message"] for w in file.get("warnings", []))
        detail = f"stderr notice: {'yes' if said else 'no'}; trace warning: {'yes' if warned else 'no'}"
        ok = said and warned
        if ok and not self.fake and r:
            dev = file["devices"].get("0", {})
            ok, peak = within(dev.get("peak_active_bytes"), r["max_memory_allocated"], 0.01)
            detail += f"; tensor {peak}"
        self.row("torch.profiler coexistence", ok, detail)

    def sigterm(self):
        out_dir = os.path.join(self.work, "sigterm")
        cmd = [self.cli, "record", "-o", out_dir, "--"] + self.workload("forever", "")
        log = open(os.path.join(self.work, "sigterm.txt"), "w")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        warm = False
        deadline = time.monotonic() + 120
        for line in p.stdout:
            log.write(line)
            if "gpu_check_workload: warm" in line:
                warm = True
                break
            if time.monotonic() > deadline:
                break
        time.sleep(1.0)
        p.send_signal(signal.SIGTERM)
        try:
            rest, _ = p.communicate(timeout=120)
            log.write(rest or "")
        except subprocess.TimeoutExpired:
            p.kill()
            self.row("SIGTERM mid-run", False, "record did not end within 120 s of SIGTERM")
            return
        log.close()
        file, where = self.summary(out_dir)
        if not file:
            self.row("SIGTERM mid-run", False, f"warm: {warm}; exit {p.returncode}; {where}")
            return
        events = sum(d.get("trace_entries", 0) for d in file["devices"].values())
        steps = len(file.get("steps", []))
        # On the CPU, tensor events need the c10 capture library, which a
        # bundle for another PyTorch leaves out; the steps are there anyway.
        self.row("SIGTERM mid-run", steps > 0 and (events > 0 or self.fake),
                 f"exit {p.returncode}; loadable trace with {events} events and {steps} steps")

    def table(self):
        lines = ["| check | result | measured |", "|---|---|---|"]
        lines += [f"| {n} | {s} | {d} |" for n, s, d in self.rows]
        return "\n".join(lines)


def within(measured, reference, tolerance):
    if measured is None or not reference:
        return False, f"measured {measured}, PyTorch {reference}"
    delta = (measured - reference) / reference
    return abs(delta) <= tolerance, (f"{measured / 2**20:.1f} MiB vs PyTorch's {reference / 2**20:.1f} MiB "
                                     f"({delta * 100:+.3f}%)")


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True, help="memscope-cli of the build or bundle")
    parser.add_argument("--work", required=True, help="folder for runs, traces and results")
    parser.add_argument("--python", default=sys.executable, help="python with PyTorch")
    parser.add_argument("--fake", action="store_true", help="no GPU: run on the CPU")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per run")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    c = Check(args.work, args.cli, args.python, args.fake, args.timeout)
    start = time.monotonic()
    if args.fake:
        for row in ("smoke", "clocks (history)", "smoke, CUPTI only", "clocks (CUPTI)"):
            c.skip(row)
    else:
        c.smoke("smoke", (), "clocks (history)")
        c.smoke("smoke-cupti-only", ("--no-python-hook",), "clocks (CUPTI)")
    c.training()
    if args.fake:
        c.skip("expandable segments")
    else:
        c.expandable()
    c.profiler()
    c.sigterm()
    table = c.table()
    print("\n" + table)
    print(f"\n{time.monotonic() - start:.0f} s in all")
    with open(os.path.join(args.work, "gpu-check.md"), "w") as f:
        f.write(table + "\n")
    return 1 if any(s == "FAIL" for _, s, _ in c.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
