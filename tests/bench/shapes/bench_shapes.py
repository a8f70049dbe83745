#!/usr/bin/env python3
"""Every speed figure on every generated snapshot shape, at two sizes.

For each shape (steady, churn, segmented) and size (default 1 GB and 3 GB) it
generates a snapshot once, converts it to the native format once, then runs
--runs alternating rounds; in each round every (size, shape) in turn:

  - `memscope-cli summary --json --timings FILE`: the file opened as the CLI
    opens it (import, inference, timeline, summary, the allocator model,
    the report), wall time, MB/s, peak RSS and each stage's time;
  - `memscope-bench-snapshot FILE --no-python`: the importer alone;
  - `memscope-bench-gui --file FILE`: the GUI's open, first paint and the six
    frame rows (median, worst, page faults at the worst);
  - `memscope-bench-native --read FILE.memscope`: the native read.

It prints each figure as min-median-max of the rounds, with its target and
whether the median meets it. --huge-mb adds one shape's import at that size
(default 10 GB of segmented, --huge-runs times) for the linear growth and the
RSS bound, and prints how much slower per byte it was than the first size
(1.00 is linear); --peer times CPython's pickle.load once per shape at the
first size. At the start and at the end it measures the machine's cost of
fresh memory (--machine-mb, --machine-pause): how fast fresh memory, memory
freed a moment before and memory after a pause are filled. On a virtual
machine whose host takes freed pages back the first and the last are many
times slower, and that is what a load pays for every page its peak grows
past what it freed a moment before.

  bench_shapes.py --bin build/bin [--work DIR] [--sizes 1024,3072]
                  [--shapes steady,churn,segmented] [--runs 3] [--huge-mb 10240]
                  [--huge-shape segmented] [--huge-runs 1] [--peer] [--keep]
                  [--machine-mb 1024] [--machine-pause 5]
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MACHINE_ROWS = ("machine: filling fresh memory, GB/s",
                "machine: filling memory freed a moment ago, GB/s",
                "machine: filling memory after a pause, GB/s")
FRAME_ROWS = [(s, m) for s in ("mixed", "zoomed out", "zoomed in") for m in ("category", "allocation")]


def run_measured(cmd, env=None):
    """Runs cmd; returns (stdout+stderr, wall seconds, peak RSS MiB, exit code)."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    p.returncode = os.waitstatus_to_exitcode(status)
    return out.decode(errors="replace"), wall, usage.ru_maxrss / 1024.0, p.returncode


def grab(pattern, text, cast=float):
    m = re.search(pattern, text, re.M)
    return cast(m.group(1)) if m else None


def spread(values, fmt="{:.2f}"):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return "–".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def frame_time(figure):
    """A frame row's median or worst time (not its page faults)."""
    return figure.startswith("frame") and figure.endswith(", ms")


def first_touch(mb, pause):
    """GB/s of filling `mb` MB of fresh anonymous memory, as every large load
    does, three times: first, again at once (the kernel hands out the pages
    just freed) and again after `pause` seconds idle. On a virtual machine
    whose host takes freed pages back, the first and the last are many times
    slower: what a load pays for every page its peak grows past what it
    freed a moment before. Run in a child process (--first-touch-child): a
    child inherits its parent's peak RSS, which would then be every later
    child's."""
    import ctypes
    import mmap
    n = mb << 20

    def fill():
        m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        try:
            m.madvise(mmap.MADV_HUGEPAGE)  # as the loads' large buffers are
        except (AttributeError, OSError):
            pass
        buf = (ctypes.c_char * n).from_buffer(m)
        start = time.perf_counter()
        ctypes.memset(buf, 1, n)
        rate = n / (time.perf_counter() - start) / 1e9
        del buf
        m.close()
        return rate

    first = fill()
    again = fill()
    time.sleep(pause)
    return first, again, fill()


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


class Bench:
    def __init__(self, args):
        self.args = args
        self.bin = args.bin
        self.work = args.work
        self.logs = os.path.join(self.work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
        self.samples = {}  # (figure, shape, size) -> [values]
        self.failures = []

    def tool(self, name):
        return os.path.join(self.bin, name)

    def add(self, figure, shape, size, value):
        self.samples.setdefault((figure, shape, size), []).append(value)

    def log(self, name, text):
        with open(os.path.join(self.logs, name + ".log"), "a") as f:
            f.write(text)

    def snapshot(self, shape, mb):
        path = os.path.join(self.work, f"{shape}-{mb}mb.pickle")
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            out, wall, _, rc = run_measured([self.tool("memscope-gen-snapshot"), path, "--mb", str(mb),
                                            "--shape", shape])
            self.log(f"gen-{shape}-{mb}", out)
            if rc != 0:
                sys.exit(f"bench_shapes: memscope-gen-snapshot {shape} {mb} MB failed:\n{out}")
            print(f"generated {path} in {wall:.1f} s: " + out.splitlines()[0], flush=True)
            os.sync()  # its dirty pages would be written back during the timed runs
        return path

    def native(self, pickle):
        path = pickle[: -len(".pickle")] + ".memscope"
        if not os.path.exists(path):
            out, _, _, rc = run_measured([self.tool("memscope-cli"), "convert", pickle, path, "--to",
                                          "native"])
            if rc != 0:
                self.failures.append(f"convert {pickle}: {out.strip()}")
                return None
            os.sync()
        return path

    def summary(self, shape, mb, path):
        timings = [] if self.args.no_timings else ["--timings"]
        out, wall, rss, rc = run_measured(
            [self.tool("memscope-cli"), "summary", "--json", *timings, path], self.env)
        self.log(f"summary-{shape}-{mb}", out[-4000:])
        if rc != 0:
            self.failures.append(f"summary {path}: exit {rc}")
            return
        size = os.path.getsize(path)
        self.add("open as the CLI does (summary --json), s", shape, mb, wall)
        self.add("open as the CLI does, MB/s", shape, mb, size / wall / 1e6)
        self.add("open as the CLI does, peak RSS / file", shape, mb, rss * 2**20 / size)
        line = grab(r"timings: (.*)$", out, str) or ""
        for name, secs in re.findall(r"([a-z ]+?) ([0-9.]+) s", line):
            if name.strip() != "wall":
                self.add(f"  stage: {name.strip()}, s", shape, mb, float(secs))

    def importer(self, shape, mb, path):
        out, _, _, rc = run_measured([self.tool("memscope-bench-snapshot"), path, "--no-python"],
                                     self.env)
        self.log(f"import-{shape}-{mb}", out)
        mibs = grab(r"memscope import .*? ([0-9.]+) MiB/s wall", out)
        if rc != 0 or mibs is None:
            self.failures.append(f"bench-snapshot {path}: exit {rc}")
            return
        self.add("importer alone (bench-snapshot), MB/s", shape, mb, mibs * 1.048576)

    def gui(self, shape, mb, path):
        out, _, _, rc = run_measured([self.tool("memscope-bench-gui"), "--file", path], self.env)
        self.log(f"gui-{shape}-{mb}", out)
        if rc not in (0, 1):  # 1: a target missed, which the table shows
            self.failures.append(f"bench-gui {path}: exit {rc}")
            return
        self.add("GUI open, s", shape, mb, grab(r"timeline built in ([0-9.]+) s", out))
        self.add("GUI first paint after load, ms", shape, mb,
                 grab(r"first paint after load: ([0-9.]+) ms", out))
        self.add("GUI peak RSS / file", shape, mb,
                 grab(r"peak resident memory of the whole process: .*? \(([0-9.]+)x", out))
        for script, mode in FRAME_ROWS:
            # median worst mean reduction raster plot-drawn faults worst-at its-faults
            m = re.search(rf"^  {script} +{mode} +([0-9.]+) +([0-9.]+)(?: +[0-9.]+){{4}} +([0-9]+) +([0-9]+) +([0-9]+)",
                          out, re.M)
            if not m:
                continue
            self.add(f"frame {script}, by {mode}: median, ms", shape, mb, float(m.group(1)))
            self.add(f"frame {script}, by {mode}: worst, ms", shape, mb, float(m.group(2)))
            self.add(f"frame {script}, by {mode}: page faults in the worst frame", shape, mb,
                     float(m.group(5)))

    def native_read(self, shape, mb, path):
        if not path:
            return
        out, _, _, rc = run_measured([self.tool("memscope-bench-native"), "--read", path], self.env)
        self.log(f"native-{shape}-{mb}", out)
        rate = grab(r"^read: .*? ([0-9.]+) M events/s", out)
        if rc != 0 or rate is None:
            self.failures.append(f"bench-native --read {path}: exit {rc}")
            return
        self.add("native read, M events/s", shape, mb, rate)

    def peer(self, shape, mb, path):
        code = ("import pickle,sys,time\nt=time.perf_counter()\n"
                "d=pickle.load(open(sys.argv[1],'rb'))\nprint('seconds', time.perf_counter()-t)")
        out, _, rss, rc = run_measured([self.args.python, "-c", code, path])
        secs = grab(r"seconds ([0-9.]+)", out)
        if rc == 0 and secs:
            self.add("peer: CPython pickle.load, s", shape, mb, secs)
            self.add("peer: CPython pickle.load, peak RSS GiB", shape, mb, rss / 1024)

    def machine(self):
        if not self.args.machine_mb:
            return
        out, _, _, rc = run_measured([sys.executable, os.path.abspath(__file__), "--first-touch-child",
                                      str(self.args.machine_mb), str(self.args.machine_pause)])
        rates = re.findall(r"[0-9.]+", out) if rc == 0 else []
        if len(rates) != 3:
            self.failures.append(f"the machine's fill rates: exit {rc}: {out.strip()}")
            return
        for fig, rate in zip(MACHINE_ROWS, rates):
            self.add(fig, "-", "-", float(rate))

    def run(self):
        a = self.args
        self.machine()
        files = {(s, mb): self.snapshot(s, mb) for mb in a.sizes for s in a.shapes}
        natives = {k: self.native(p) for k, p in files.items()} if not a.no_native else {}
        for r in range(a.runs):
            for mb in a.sizes:
                for s in a.shapes:
                    f = files[(s, mb)]
                    print(f"round {r + 1}/{a.runs}: {s} {mb} MB", flush=True)
                    self.summary(s, mb, f)
                    self.importer(s, mb, f)
                    if not a.no_gui:
                        self.gui(s, mb, f)
                    if natives:
                        self.native_read(s, mb, natives[(s, mb)])
        if a.peer:
            for s in a.shapes:
                self.peer(s, a.sizes[0], files[(s, a.sizes[0])])
        if a.huge_mb:
            f = self.snapshot(a.huge_shape, a.huge_mb)
            for r in range(a.huge_runs):
                print(f"huge import {r + 1}/{a.huge_runs}: {a.huge_shape} {a.huge_mb} MB", flush=True)
                self.summary(a.huge_shape, a.huge_mb, f)
            if not a.keep:
                os.remove(f)
        self.machine()
        self.table()

    def table(self):
        a = self.args
        sizes = list(a.sizes) + ([a.huge_mb] if a.huge_mb else [])
        targets = {
            "open as the CLI does, MB/s": (">= 400", lambda v: v >= 400),
            "open as the CLI does, peak RSS / file": ("<= 0.6", lambda v: v <= 0.6),
            "GUI open, s": ("<= 2.5 at 1 GB", None),
            "GUI first paint after load, ms": ("<= 100", lambda v: v <= 100),
            "native read, M events/s": (">= 60", lambda v: v >= 60),
        }
        figures = []
        for (fig, shape, _) in self.samples:
            if fig not in figures and shape != "-":
                figures.append(fig)
        print()
        print(f"min–median–max of {a.runs} alternating rounds"
              + (f" ({a.huge_runs} at {a.huge_mb} MB)" if a.huge_mb else "") + "; sizes in MB")
        print("| figure | shape | " + " | ".join(f"{mb} MB" for mb in sizes) + " | target | median met |")
        print("|---|---|" + "---|" * len(sizes) + "---|---|")
        for fig in figures:
            for s in a.shapes:
                cells, verdicts = [], []
                for mb in sizes:
                    vals = self.samples.get((fig, s, mb), [])
                    fmt = "{:.0f}" if "MB/s" in fig or "faults" in fig or "ms" in fig and "frame" not in fig else "{:.2f}"
                    cells.append(spread(vals, fmt))
                    target = targets.get(fig)
                    m = median(vals)
                    if frame_time(fig) and m is not None:
                        verdicts.append("yes" if m <= 16 else "NO")
                    elif fig == "GUI open, s" and m is not None and mb == 1024:
                        verdicts.append("yes" if m <= 2.5 else "NO")
                    elif target and target[1] and m is not None:
                        verdicts.append("yes" if target[1](m) else "NO")
                if all(c == "-" for c in cells):
                    continue
                if frame_time(fig):
                    tgt = "<= 16"
                else:
                    tgt = targets[fig][0] if fig in targets else ""
                met = "-" if not verdicts else ("NO" if "NO" in verdicts else "yes")
                print(f"| {fig} | {s} | " + " | ".join(cells) + f" | {tgt} | {met} |")
        if a.huge_mb:
            # Linear growth means the same MB/s at every size.
            key = "open as the CLI does, MB/s"
            small = median(self.samples.get((key, a.huge_shape, sizes[0]), []))
            big = median(self.samples.get((key, a.huge_shape, a.huge_mb), []))
            if small and big:
                print(f"growth: {a.huge_shape} at {a.huge_mb} MB took {small / big:.2f}x the time per byte "
                      f"of {sizes[0]} MB (1.00 is linear; medians)")
        for fig in MACHINE_ROWS:
            vals = self.samples.get((fig, "-", "-"), [])
            if vals:
                print(f"{fig}: " + ", ".join(f"{v:.2f}" for v in vals)
                      + f" ({a.machine_mb} MB, {a.machine_pause:g} s pause; at the start and at the end)")
        for f in self.failures:
            print(f"failed: {f}")
        print(f"logs: {self.logs}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--first-touch-child":
        print(" ".join(f"{r:.3f}" for r in first_touch(int(sys.argv[2]), float(sys.argv[3]))))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.environ.get("MEMSCOPE_BIN", "build/bin"))
    p.add_argument("--work", help="folder for the generated files (default: a temporary one)")
    p.add_argument("--sizes", default="1024,3072", help="snapshot sizes in MB (default 1024,3072)")
    p.add_argument("--shapes", default="steady,churn,segmented")
    p.add_argument("--runs", type=int, default=3, help="alternating rounds (default 3)")
    p.add_argument("--huge-mb", type=int, default=10240,
                   help="one more import at this size, 0 for none (default 10240)")
    p.add_argument("--huge-shape", default="segmented")
    p.add_argument("--huge-runs", type=int, default=1)
    p.add_argument("--peer", action="store_true", help="CPython's pickle.load once per shape")
    p.add_argument("--python", default=os.environ.get("PYTHON", sys.executable))
    p.add_argument("--no-gui", action="store_true")
    p.add_argument("--no-native", action="store_true")
    p.add_argument("--no-timings", action="store_true",
                   help="no summary --timings (binaries from before it existed)")
    p.add_argument("--keep", action="store_true", help="keep the generated files")
    p.add_argument("--machine-mb", type=int, default=1024,
                   help="MB filled to measure the machine's cost of fresh memory, 0 for none "
                        "(default 1024)")
    p.add_argument("--machine-pause", type=float, default=5.0,
                   help="seconds idle before the last fill (default 5)")
    a = p.parse_args()
    try:
        a.sizes = [int(x) for x in a.sizes.split(",") if x]
    except ValueError:
        p.error("--sizes: a comma-separated list of sizes in MB")
    a.shapes = [s for s in a.shapes.split(",") if s]
    for s in a.shapes:
        if s not in ("steady", "churn", "segmented"):
            p.error(f"--shapes: unknown shape '{s}' (steady, churn, segmented)")
    if a.machine_mb < 0 or a.machine_pause < 0:
        p.error("--machine-mb and --machine-pause must not be negative")
    if a.runs < 1 or not a.sizes or any(mb < 1 for mb in a.sizes):
        p.error("--runs and every size must be at least 1")
    for exe in ("memscope-gen-snapshot", "memscope-cli", "memscope-bench-snapshot"):
        if not os.access(os.path.join(a.bin, exe), os.X_OK):
            p.error(f"no {exe} in {a.bin} (build first, or give --bin)")
    temporary = not a.work
    a.work = a.work or tempfile.mkdtemp(prefix="memscope-shapes.")
    os.makedirs(a.work, exist_ok=True)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        Bench(a).run()
    finally:
        if temporary and not a.keep:
            shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
