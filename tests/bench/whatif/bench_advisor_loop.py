"""The advisor's loop closed on plain PyTorch scripts of our own (scripts/:
a GPT-style transformer, a ResNet-style CNN, and a tower of MLP blocks of
different widths, a non-uniform layer chain):

  1. `memscope-cli record` the script's full-save run once;
  2. `whatif --frontier --json`: the budgets are three points between the
     full run's peak and the smallest predicted one;
  3. `whatif --budget B --json`: the advisor's answer for each budget;
     a fourth case, the tower wide on few tokens, is one whose answer fuses
     the optimizer into backward;
  4. `record --apply ANSWER --from FULL`: the unmodified script recorded
     with the answer applied by memscope's hook; its measured peak from
     `summary --json`, and the losses it prints against the full run's.

Then `whatif --emit pytorch` for one answer this PyTorch can run, pasted
into the script (--setup FILE) and recorded: its peak against the applied
run's.

Prints one row per answer:

  script       budget     answer                    predicted   measured    diff  fits  losses
  transformer  180.0 MiB  layers:3+save:matmul@0-2   159.0 MiB  159.2 MiB  -0.1%  yes   same

and exits 1 when an answer is off by more than --tolerance, does not fit
its budget, changes the losses, or cannot be applied; 77 (skipped) without
a python3 that imports torch.

usage: bench_advisor_loop.py --cli PATH [--out DIR] [--tolerance PCT]
       [--only transformer|cnn|tower]"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "record"))
from bench_util import torch_python  # noqa: E402
# What the plain-script what-if check has already: running, peaks, sizes.
from bench_whatif_scripts import host_peak, mib, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")

CASES = [
    ("transformer", "policy_transformer.py", []),
    ("cnn", "policy_cnn.py", []),
    ("tower", "policy_tower.py", []),
    # Wide layers on few tokens: the gradients, not the activations, make
    # the peak, and the optimizer fused into backward is the answer.
    ("tower-wide", "policy_tower.py", ["--width", "512", "--tokens", "256"]),
]
BUDGET_POINTS = (0.3, 0.6, 0.9)  # of the way from the full peak down to the smallest predicted


def losses_of(stdout):
    return [line for line in stdout.splitlines() if line.startswith("step ")]


def same_losses(a, b, opt_in_bwd):
    """Equal as printed; with the optimizer fused into backward (per-parameter
    steps), equal to 1e-6 relative."""
    if len(a) != len(b):
        return False
    if not opt_in_bwd:
        return a == b
    for x, y in zip(a, b):
        fx, fy = float(x.split()[-1]), float(y.split()[-1])
        if abs(fx - fy) > 1e-6 * max(abs(fx), abs(fy)) + 1e-6:
            return False
    return True


def record(cli, python, folder, script, args, extra=()):
    cmd = [cli, "record", "-o", folder] + list(extra) + ["--", python,
                                                          os.path.join(SCRIPTS, script)] + args
    done = run(cmd)
    if done.returncode != 0:
        return None, losses_of(done.stdout), (done.stderr or done.stdout)[-1500:]
    traces = sorted(f for f in os.listdir(folder) if f.endswith(".memscope"))
    if len(traces) != 1:
        return None, [], "expected one trace in %s, found %s" % (folder, traces)
    return os.path.join(folder, traces[0]), losses_of(done.stdout), ""


def whatif_json(cli, *args):
    done = run([cli, "whatif", "--json"] + list(args))
    if done.returncode != 0:
        raise SystemExit("whatif failed: %s" % done.stderr)
    return json.loads(done.stdout)


def torch_version(python):
    done = run([python, "-c", "import torch; print(torch.__version__)"])
    parts = re.findall(r"\d+", done.stdout)[:2]
    return tuple(int(p) for p in parts) if len(parts) == 2 else (0, 0)


def check(args, python, out, name, script, size, row_format, emitted):
    full, full_losses, err = record(args.cli, python, os.path.join(out, name + "-full"), script,
                                    size)
    if not full:
        raise SystemExit("recording %s failed: %s" % (script, err))
    report = whatif_json(args.cli, full, "--frontier")
    frontier = report["advisor"]["frontier"]
    top = report["measured"].get("reserved_peak_bytes", report["measured"]["peak_bytes"])
    bottom = min(p["judged_bytes"] for p in frontier)
    failures = 0
    faster = []
    for point in BUDGET_POINTS:
        budget = int(top - point * (top - bottom))
        advice = whatif_json(args.cli, full, "--budget", str(budget))["advisor"]
        choice = advice["choice"]
        if not choice:
            print(row_format % (name, mib(budget), "-", "-", "-", "", "", "", advice["line"]))
            failures += 1
            continue
        policy = choice["policy"]
        folder = os.path.join(out, "%s-%d" % (name, int(point * 100)))
        applied, losses, err = record(args.cli, python, folder, script, size,
                                      ["--apply", policy, "--from", full])
        if not applied:
            print(row_format % (name, mib(budget), policy, mib(choice["judged_bytes"]), "-", "",
                                "", "", "NOT APPLIED: " + err.strip().splitlines()[-1]))
            failures += 1
            continue
        measured = host_peak(args.cli, applied)
        diff = 100.0 * (choice["judged_bytes"] - measured) / measured
        fits = measured <= budget
        same = same_losses(losses, full_losses, "opt-in-bwd" in policy)
        bad = abs(diff) > args.tolerance or not fits or not same
        failures += bad
        uniform = advice["best_uniform"]
        versus = ("best uniform %s %.1f ms, answer %.1f ms" %
                  (uniform["policy"], uniform["step_ms"], choice["step_ms"])
                  if uniform else "no uniform policy fits")
        if uniform and choice["step_ms"] < uniform["step_ms"] - 1e-9:
            faster.append(name)
        print(row_format % (name, mib(budget), policy, mib(choice["judged_bytes"]), mib(measured),
                            "%+6.1f%%" % diff, "yes" if fits else "NO",
                            "same" if same else "DIFFER",
                            versus + ("  <-- off" if bad else "")))
        emitted.append((name, script, size, full, policy, applied, measured))
    return failures, faster


def check_emitted(args, python, out, candidates, version):
    """The first answer whose emitted code this PyTorch runs, pasted into
    its script: its measured peak against the applied run's."""
    for name, script, size, full, policy, applied, applied_peak in candidates:
        done = run([args.cli, "whatif", full, "--emit", "pytorch", policy])
        if done.returncode != 0:
            continue
        needs = re.search(r"Needs PyTorch >= (\d+)\.(\d+)", done.stdout)
        if not needs or (int(needs.group(1)), int(needs.group(2))) > version:
            continue
        code = os.path.join(out, "%s-emitted.py" % name)
        with open(code, "w") as f:
            f.write(done.stdout)
        trace, _, err = record(args.cli, python, os.path.join(out, name + "-pasted"), script,
                               size + ["--setup", code])
        if not trace:
            print("emitted code for %s (%s) failed: %s" % (name, policy, err))
            return 1
        pasted = host_peak(args.cli, trace)
        diff = 100.0 * (pasted - applied_peak) / applied_peak
        bad = abs(diff) > 2.0
        print("emitted code: %s %s pasted into %s: measured %s, applied by record --apply %s "
              "(%+.1f%%)%s" % (name, policy, script, mib(pasted), mib(applied_peak), diff,
                               "  <-- off" if bad else ""))
        return int(bad)
    print("emitted code: no answer's code runs on PyTorch %d.%d (save lists need 2.4, "
          "opt-in-bwd 2.1)" % version)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out")
    ap.add_argument("--tolerance", type=float, default=5.0, help="percent (default 5)")
    ap.add_argument("--only")
    args = ap.parse_args()
    python = torch_python()
    if python is None:
        print("SKIP: no python3 that imports torch")
        return 77
    out = args.out or tempfile.mkdtemp(prefix="memscope-advisor-loop-")
    row_format = "%-12s %-10s %-44s %10s %10s %7s  %-4s  %-6s  %s"
    print(row_format % ("script", "budget", "answer", "predicted", "measured", "diff", "fits",
                        "losses", ""))
    failures, faster, emitted = 0, [], []
    for name, script, size in CASES:
        if args.only and args.only != name:
            continue
        f, fast = check(args, python, out, name, script, size, row_format, emitted)
        failures += f
        faster += fast
    failures += check_emitted(args, python, out, emitted, torch_version(python))
    print("answers strictly faster (predicted) than the best uniform policy that fits: %d "
          "(%s)" % (len(faster), ", ".join(sorted(set(faster))) or "none"))
    if args.out:
        print("traces in %s" % out)
    else:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
