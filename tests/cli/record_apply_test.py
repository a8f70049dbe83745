#!/usr/bin/env python3
"""`record --apply POLICY` end to end on PyTorch (CPU): a plain script,
record_scripts/train_apply_blocks.py (4 blocks in a ModuleList, or in an
nn.Sequential with --sequential; AdamW; seeded, dropout included), recorded
plain, then with the policy applied by memscope's hook:

  layers      --apply layers:1-2 --from PLAIN
  save_list   --apply save:matmul --from PLAIN (every block, matmuls saved)
  opt_in_bwd  --apply opt-in-bwd (no RUN needed)
  sequential  --apply sequential:2 --from PLAIN on the nn.Sequential body
  mix         --apply layers:0+save:matmul@2-3: blocks of one class each
              with its own choice, held to whatif's prediction (5%)

each checked for: the same printed losses as the plain run (bit for bit; the
fused optimizer to 1e-6 relative), a lower peak (`summary --json`), the trace
named "... (applied: POLICY)" with the property applied_policy, recompute
module scopes for exactly the checkpointed layers; and

  refused     a module the model lacks (a plan from the ModuleList run
              applied to the Sequential one) and clip_grad_norm_ with
              opt-in-bwd: refused with the reason, exit 4, the job's losses
              its own, the trace not named after the policy; bad policies,
              a missing --from, an unreadable RUN, --no-python-hook,
              --module-depth 0, --from alone, MEMSCOPE_APPLY inherited from
              the environment: exit 1 before the job runs.

usage: record_apply_test.py MEMSCOPE_CLI FACTS CASE   (FACTS: memscope_record_apply_facts)
Skips (77) without a python3 that imports torch.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from record_test_util import SKIP, Skip, fail, python_with_torch  # noqa: E402
SCRIPT = os.path.join(HERE, "record_scripts", "train_apply_blocks.py")
APPLY_REFUSED = 4
NOT_RUN = 1


class Ctx:
    def __init__(self, cli, facts, py, tmp):
        self.cli, self.facts, self.py, self.tmp = cli, facts, py, tmp

    def record(self, name, apply=None, frm=None, script_args=(), expect=0, extra=(), env=None):
        out = os.path.join(self.tmp, name)
        cmd = [self.cli, "record", "-o", out] + list(extra)
        if apply is not None:
            cmd += ["--apply", apply]
        if frm is not None:
            cmd += ["--from", frm]
        cmd += ["--", self.py, SCRIPT] + list(script_args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240,
                           env=dict(os.environ, **(env or {})))
        if p.returncode != expect:
            fail("%s exited %d, expected %d\n%s\n%s" % (" ".join(cmd), p.returncode, expect,
                                                        p.stdout, p.stderr))
        trace = None
        if os.path.isdir(out):
            traces = [f for f in os.listdir(out) if f.endswith(".memscope")]
            if len(traces) == 1:
                trace = os.path.join(out, traces[0])
        return p, trace

    def losses(self, p):
        lines = [l for l in p.stdout.splitlines() if " loss " in l]
        if len(lines) != 5 or "trained 4 steps" not in p.stdout:
            fail("the script did not finish its 4 steps:\n%s\n%s" % (p.stdout, p.stderr))
        return [float(l.rsplit(" ", 1)[1]) for l in lines]

    def peak(self, trace):
        p = subprocess.run([self.cli, "summary", "--json", trace], capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            fail("summary --json %s exited %d\n%s" % (trace, p.returncode, p.stderr))
        devices = json.loads(p.stdout)["files"][0]["devices"]
        return max(d["peak_active_bytes"] for d in devices.values())

    def trace_facts(self, trace):
        p = subprocess.run([self.facts, trace], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            fail("%s %s exited %d\n%s" % (self.facts, trace, p.returncode, p.stderr))
        return json.loads(p.stdout)


def check_applied(ctx, plain, applied, policy_text, recomputed, exact=True, save_lists=None):
    plain_p, plain_trace = plain
    p, trace = applied
    want, got = ctx.losses(plain_p), ctx.losses(p)
    if exact and got != want:
        fail("--apply %s changed the losses:\n  plain   %r\n  applied %r" % (policy_text, want,
                                                                           got))
    if not exact and any(abs(a - b) > 1e-6 * abs(a) for a, b in zip(want, got)):
        fail("--apply %s: losses beyond 1e-6 relative:\n  plain   %r\n  applied %r"
             % (policy_text, want, got))
    if "applied in process" not in p.stdout:
        fail("record did not report the policy applied:\n%s" % p.stdout)
    if trace is None:
        fail("--apply %s left no trace" % policy_text)
    facts = ctx.trace_facts(trace)
    props = facts["properties"]
    policy = props.get("applied_policy")
    if not policy:
        fail("the applied trace has no applied_policy: %r" % facts)
    if facts["name"] != "train_apply_blocks.py (applied: %s)" % policy:
        fail("the applied trace is named %r" % facts["name"])
    if save_lists is not None and props.get("applied.save_lists") != save_lists:
        fail("applied.save_lists is %r, expected %r" % (props.get("applied.save_lists"),
                                                        save_lists))
    layers = sorted({r for r in facts["recomputed"] if r.count(".") == 1})
    if layers != sorted(recomputed):
        fail("recompute scopes for %r, expected %r" % (layers, sorted(recomputed)))
    plain_peak, applied_peak = ctx.peak(plain_trace), ctx.peak(trace)
    print("%-22s peak %10d B (plain %10d B, %+.1f%%), policy %s" % (
        policy_text, applied_peak, plain_peak, 100.0 * (applied_peak - plain_peak) / plain_peak,
        policy))
    if not applied_peak < plain_peak:
        fail("--apply %s: peak %d is not below the plain run's %d" % (policy_text, applied_peak,
                                                                      plain_peak))


def case_layers(ctx):
    plain = ctx.record("plain")
    applied = ctx.record("layers", "layers:1-2", plain[1])
    check_applied(ctx, plain, applied, "layers:1-2", ["blocks.1", "blocks.2"])
    # What running the job again takes (the GUI's "Record with this
    # policy"): its arguments exactly, and where it ran.
    props = ctx.trace_facts(plain[1])["properties"]
    argv = json.loads(props.get("argv", "null") or "null")
    if not argv or argv[-1] != SCRIPT or props.get("cwd") != os.getcwd():
        fail("the plain run does not keep its command and folder: argv %r, cwd %r"
             % (props.get("argv"), props.get("cwd")))


def case_save_list(ctx):
    plain = ctx.record("plain")
    applied = ctx.record("save", "save:matmul", plain[1])
    check_applied(ctx, plain, applied, "save:matmul",
                  ["blocks.0", "blocks.1", "blocks.2", "blocks.3"],
                  save_lists="memscope-dispatch-cache")


def case_opt_in_bwd(ctx):
    plain = ctx.record("plain")
    applied = ctx.record("fused", "opt-in-bwd")
    check_applied(ctx, plain, applied, "opt-in-bwd", [], exact=False)


def case_sequential(ctx):
    plain = ctx.record("plain", script_args=["--sequential"])
    applied = ctx.record("seq", "sequential:2", plain[1], script_args=["--sequential"])
    # checkpoint_sequential leaves the last segment as it is.
    check_applied(ctx, plain, applied, "sequential:2", ["body.0", "body.1"])


def predicted_peak(ctx, run, policy):
    p = subprocess.run([ctx.cli, "whatif", "--json", run, "--policy", policy],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("whatif --policy %s exited %d\n%s" % (policy, p.returncode, p.stderr))
    row = json.loads(p.stdout)["predictions"][0]
    if "refused" in row:
        fail("whatif refused %s: %s" % (policy, row["refused"]))
    return row["peak_bytes"]


def case_mix(ctx):
    """Modules of one class taking different choices: block 0 whole, blocks
    2 and 3 with the save list. Each keeps its own: the mix holds more than
    checkpointing the three whole, and what whatif predicts for it."""
    plain = ctx.record("plain")
    mix = "layers:0+save:matmul@2-3"
    applied = ctx.record("mix", mix, plain[1])
    check_applied(ctx, plain, applied, mix, ["blocks.0", "blocks.2", "blocks.3"],
                  save_lists="memscope-dispatch-cache")
    whole = ctx.record("whole", "layers:0,2,3", plain[1])
    check_applied(ctx, plain, whole, "layers:0,2,3", ["blocks.0", "blocks.2", "blocks.3"])
    mix_peak, whole_peak = ctx.peak(applied[1]), ctx.peak(whole[1])
    if not mix_peak > whole_peak:
        fail("the save lists of %s kept nothing: peak %d, checkpointed whole %d"
             % (mix, mix_peak, whole_peak))
    for policy, peak in ((mix, mix_peak), ("layers:0,2,3", whole_peak)):
        predicted = predicted_peak(ctx, plain[1], policy)
        if abs(predicted - peak) > 0.05 * peak:
            fail("%s: predicted %d, measured %d (more than 5%% apart)" % (policy, predicted,
                                                                          peak))
    # compare lines the prediction up with the applied run of its policy.
    out = os.path.join(ctx.tmp, "predicted")
    p = subprocess.run([ctx.cli, "whatif", plain[1], "--policy", mix, "--out", out],
                       capture_output=True, text=True, timeout=120)
    predicted = [os.path.join(out, f) for f in os.listdir(out)] if p.returncode == 0 else []
    if len(predicted) != 1:
        fail("whatif --out wrote %r\n%s" % (predicted, p.stderr))
    p = subprocess.run([ctx.cli, "compare", "--json", plain[1], predicted[0], applied[1]],
                       capture_output=True, text=True, timeout=120)
    runs = json.loads(p.stdout)["runs"] if p.returncode == 0 else []
    if len(runs) != 3 or runs[1].get("vs_measured", {}).get("run") != applied[1]:
        fail("compare does not check the prediction against the applied run:\n%s%s"
             % (p.stdout, p.stderr))


def check_refused(ctx, name, apply, frm, args, reason):
    plain_p, _ = ctx.record(name + "-plain", script_args=args)
    p, trace = ctx.record(name, apply, frm, script_args=args, expect=APPLY_REFUSED)
    # The job names the policy as the plan does (layers:1,2 for layers:1-2).
    said = [l for l in p.stderr.splitlines()
            if l.startswith("memscope: --apply ") and " refused: " in l and reason in l]
    if not said:
        fail("no refusal naming %r on stderr:\n%s" % (reason, p.stderr))
    if p.stderr.count("memscope: --apply") != 1:
        fail("the job said its refusal more than once:\n%s" % p.stderr)
    if "memscope-cli record: --apply %s refused in process" % apply not in p.stderr:
        fail("record's report does not say it was refused:\n%s" % p.stderr)
    facts = ctx.trace_facts(trace)
    if "applied_policy" in facts["properties"] or "applied" in facts["name"]:
        fail("a refused policy is shown as applied: %r" % facts)
    if reason not in facts["properties"].get("apply.refused", ""):
        fail("apply.refused does not say why: %r" % facts)
    return ctx.losses(plain_p), ctx.losses(p)


def case_refused(ctx):
    plain = ctx.record("plain")
    # Bad usage: refused before the job runs (nothing printed by it).
    plan = os.path.join(ctx.tmp, "planted.json")
    for what, apply, frm, extra, env in (
            ("a bad policy", "layers:x", plain[1], [], None),
            ("layers without --from", "layers:1-2", None, [], None),
            ("an unreadable RUN", "layers:1-2", os.path.join(ctx.tmp, "missing.memscope"), [],
             None),
            ("a layer the run lacks", "layers:9", plain[1], [], None),
            ("no Python hook", "opt-in-bwd", None, ["--no-python-hook"], None),
            ("no module hooks", "layers:1-2", plain[1], ["--module-depth", "0"], None),
            ("--from without --apply", None, plain[1], [], None),
            ("a plan in the environment", None, None, [], {"MEMSCOPE_APPLY": plan})):
        p, _ = ctx.record("bad", apply, frm, extra=extra, expect=NOT_RUN, env=env)
        if "step 0" in p.stdout or "memscope-cli record: " not in p.stderr:
            fail("%s: the job ran, or record said nothing:\n%s\n%s" % (what, p.stdout,
                                                                        p.stderr))
        print("refused before running (%s): %s" % (what, p.stderr.strip().splitlines()[-1]))
    # A module the model does not have: the ModuleList run's plan on the
    # nn.Sequential model. The job runs on unchanged.
    want, got = check_refused(ctx, "missing", "layers:1-2", plain[1], ["--sequential"],
                              "has no module blocks.1")
    if want != got:
        fail("the refused job's losses changed: %r vs %r" % (want, got))
    # Gradient clipping with the step in backward.
    check_refused(ctx, "clip", "opt-in-bwd", None, ["--clip"], "clip_grad_norm_")
    print("refused: a missing module, clip_grad_norm_ with opt-in-bwd")


CASES = {"layers": case_layers, "save_list": case_save_list, "mix": case_mix, "opt_in_bwd": case_opt_in_bwd,
         "sequential": case_sequential, "refused": case_refused}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        print(__doc__)
        return 2
    try:
        py = python_with_torch()
    except Skip as e:
        print("SKIP:", e)
        return SKIP
    tmp = tempfile.mkdtemp(prefix="memscope-apply-")
    try:
        CASES[sys.argv[3]](Ctx(sys.argv[1], sys.argv[2], py, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
