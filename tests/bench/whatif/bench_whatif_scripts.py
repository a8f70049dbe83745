"""memscope's op-level and named-policy predictions held to measured runs of
plain PyTorch scripts (scripts/: a GPT-style transformer and a ResNet-style
CNN, policies applied by hand).

For each script: `memscope-cli record` its full-save run once, `whatif
--policy P --json` on that recording, then `record` the script again with P
applied by hand and read its measured peak from `summary --json`. Prints one
row per policy:

  script       shape  policy             predicted   measured    diff  losses
  transformer  full   selective           41.2 MiB   41.0 MiB  +0.5%  same

and exits 1 when a prediction is refused or off by more than --tolerance, or
when a policy changes the losses the script prints; 77 (skipped) without a
python3 that imports torch.

Shapes: `full` (the default; a 6-layer transformer, a 9-block CNN) and
`small` (4 layers and 6 blocks, narrower: the CNN's activations are 64 times
smaller), a second shape of each script to report, not to tune on.

usage: bench_whatif_scripts.py --cli PATH [--out DIR] [--shapes full,small]
       [--tolerance PCT] [--only transformer|cnn]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "record"))
from bench_util import torch_python  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")

# (script, its size arguments by shape, the policies held to measurement)
CASES = [
    ("transformer", "policy_transformer.py",
     {"small": ["--layers", "4", "--width", "128", "--seq", "64", "--batch", "4"],
      "full": ["--layers", "6", "--width", "256", "--seq", "128", "--batch", "8"]},
     ["block", "selective", "save:matmul", "save:aten::addmm", "sequential:2", "sequential:4",
      "every:2"]),
    ("cnn", "policy_cnn.py",
     {"small": ["--blocks-per-stage", "2", "--width", "8", "--image", "16", "--batch", "8"],
      "full": ["--blocks-per-stage", "3", "--width", "16", "--image", "32", "--batch", "16"]},
     ["block", "sequential:2", "sequential:4", "every:2"]),
]


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def record(cli, python, folder, script, args, policy):
    cmd = [cli, "record", "-o", folder, "--", python, os.path.join(SCRIPTS, script),
           "--policy", policy] + args
    done = run(cmd)
    if done.returncode != 0:
        raise SystemExit("recording failed: %s\n%s" % (" ".join(cmd), done.stderr[-2000:]))
    traces = sorted(f for f in os.listdir(folder) if f.endswith(".memscope"))
    if len(traces) != 1:
        raise SystemExit("expected one trace in %s, found %s" % (folder, traces))
    losses = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    return os.path.join(folder, traces[0]), losses


def host_peak(cli, trace):
    done = run([cli, "summary", "--json", trace])
    if done.returncode != 0:
        raise SystemExit("summary failed on %s: %s" % (trace, done.stderr))
    devices = json.loads(done.stdout)["files"][0]["devices"]
    return max(d["peak_active_bytes"] for d in devices.values())


def mib(n):
    return "%.1f MiB" % (n / 2**20)


def check(args, python, out, name, shape, script, size, policies, row_format):
    """Records the full run, predicts `policies`, measures each; prints the
    rows and returns how many are off."""
    tag = "%s-%s" % (name, shape)
    full, full_losses = record(args.cli, python, os.path.join(out, tag + "-full"), script, size,
                               "full")
    done = run([args.cli, "whatif", full, "--json", "--policy", ",".join(policies)])
    if done.returncode != 0:
        raise SystemExit("whatif failed: %s" % done.stderr)
    report = json.loads(done.stdout)
    print(row_format % (name, shape, "full", "", mib(report["measured"]["peak_bytes"]), "",
                        "(the recording predicted from)"))
    rows = {p["policy"]: p for p in report["predictions"]}
    failures = 0
    for policy in policies:
        folder = os.path.join(out, "%s-%s" % (tag, policy.replace(":", "_")))
        trace, losses = record(args.cli, python, folder, script, size, policy)
        measured = host_peak(args.cli, trace)
        same = "same" if losses == full_losses else "DIFFER"
        row = rows.get(policy)
        if row is None or "refused" in row:
            why = row["refused"] if row else "not in whatif's answer"
            print(row_format % (name, shape, policy, "-", mib(measured), "",
                                same + "  refused: " + why))
            failures += 1
            continue
        diff = 100.0 * (row["peak_bytes"] - measured) / measured
        bad = abs(diff) > args.tolerance or same != "same"
        failures += bad
        print(row_format % (name, shape, policy, mib(row["peak_bytes"]), mib(measured),
                            "%+6.1f%%" % diff, same + ("  <-- off" if bad else "")))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out")
    ap.add_argument("--shapes", default="full", help="full, small or both (full,small)")
    ap.add_argument("--tolerance", type=float, default=5.0, help="percent (default 5)")
    ap.add_argument("--only")
    args = ap.parse_args()
    python = torch_python()
    if python is None:
        print("SKIP: no python3 that imports torch")
        return 77
    out = args.out or tempfile.mkdtemp(prefix="memscope-whatif-scripts-")
    failures = 0
    shapes = [x for x in args.shapes.split(",") if x]
    if not shapes or any(x not in ("full", "small") for x in shapes):
        ap.error("--shapes takes full, small or full,small")
    row_format = "%-12s %-6s %-18s %12s %12s %7s  %s"
    print(row_format % ("script", "shape", "policy", "predicted", "measured", "diff", "losses"))
    for name, script, sizes, policies in CASES:
        if args.only and args.only != name:
            continue
        for shape in shapes:
            failures += check(args, python, out, name, shape, script, sizes[shape], policies,
                              row_format)
    if args.out:
        print("traces in %s" % out)
    else:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
