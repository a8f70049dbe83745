#!/usr/bin/env bash
# GPU check of the CUPTI tracer and `memscope-cli record` (docs/GPU_CHECK.md).
#
# For a machine with an NVIDIA GPU, its driver, a CUDA toolkit with CUPTI and
# PyTorch (with CUDA) in python3. Builds only core + the tracer + the CLI,
# runs scripts/gpu_check_train.py four times (plain, recorded, plain without
# the caching allocator, recorded with --tensor-level) and prints: peak
# reserved bytes from the trace against torch.cuda.max_memory_reserved(), event
# counts, the NVTX phases seen, and the step time with against without tracing.
#
# Environment: STEPS (default 60), JOBS (build jobs, default nproc),
# MEMSCOPE_GPU_CHECK_DIR (work folder, default a new /tmp folder), RUN_TIMEOUT
# (seconds per training run, default 150). Exit code 0 when both recordings
# produced a trace with CUDA memory events and NVTX phases.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${MEMSCOPE_GPU_CHECK_DIR:-$(mktemp -d /tmp/memscope-gpu-check.XXXXXX)}
steps=${STEPS:-60}
jobs=${JOBS:-$(nproc)}
run_timeout=${RUN_TIMEOUT:-150}
build=$work/build
train=$repo/scripts/gpu_check_train.py
mkdir -p "$work"

say() { printf '\n== %s\n' "$*"; }
fail() { printf 'gpu-check: %s\n' "$*" >&2; exit 1; }

say "machine"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
python3 - <<'PY' || fail "python3 has no PyTorch with a usable GPU"
import torch
assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
PY

say "build (core + CUPTI tracer + CLI) in $build"
generator="Unix Makefiles"
command -v ninja >/dev/null && generator=Ninja
cmake -S "$repo" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
    -DMEMSCOPE_BUILD_GUI=OFF -DMEMSCOPE_BUILD_TRAINER=OFF -DMEMSCOPE_BUILD_TESTS=OFF \
    -DMEMSCOPE_BUILD_BENCHMARKS=OFF -DMEMSCOPE_BUILD_CUPTI=ON >"$work/cmake.log" 2>&1 \
    || fail "cmake failed, see $work/cmake.log"
cmake --build "$build" --target memscope_cupti memscope-cli -j "$jobs" >"$work/build.log" 2>&1 \
    || fail "build failed, see $work/build.log"
[[ -f $build/lib/libmemscope_cupti.so ]] || fail "the tracer was not built (CUDA toolkit not found?), see $work/cmake.log"
cli=$build/bin/memscope-cli
echo "built $build/lib/libmemscope_cupti.so"

# run NAME [ENV=VALUE...] -- COMMAND...: output to $work/NAME.txt, exit code to $work/NAME.rc
run() {
    local name=$1; shift
    local env=()
    while [[ $1 != -- ]]; do env+=("$1"); shift; done
    shift
    local start=$SECONDS rc=0
    env "${env[@]}" timeout --signal=TERM --kill-after=20 "$run_timeout" "$@" >"$work/$name.txt" 2>&1 || rc=$?
    echo "$rc" >"$work/$name.rc"
    printf '%-14s exit %-3s %4ss  (%s)\n' "$name" "$rc" "$((SECONDS - start))" "$work/$name.txt"
}

say "training runs ($steps steps each)"
train_args=(--steps "$steps" --warmup 10)
run plain         -- python3 "$train" "${train_args[@]}" --result "$work/plain.json"
run recorded      -- "$cli" record -o "$work/traces-segment" -- \
                     python3 "$train" "${train_args[@]}" --result "$work/recorded.json"
run plain-nocache PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- \
                     python3 "$train" "${train_args[@]}" --result "$work/plain-nocache.json"
run recorded-tensor -- "$cli" record --tensor-level -o "$work/traces-tensor" -- \
                     python3 "$train" "${train_args[@]}" --result "$work/recorded-tensor.json"

say "report"
python3 - "$work" <<'PY'
import json, os, re, sys

work = sys.argv[1]

def load_json(name):
    try:
        with open(os.path.join(work, name + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def parse_record(name):
    """The trace summary `memscope-cli record` printed after the run."""
    try:
        text = open(os.path.join(work, name + ".txt"), errors="replace").read()
    except OSError:
        return {"text": "", "traces": []}
    traces, device = [], None
    for line in text.splitlines():
        if re.match(r"^  (/.+\.memscope)$", line):
            traces.append({"path": line.strip(), "devices": {}, "phases": "", "gaps": []})
            device = None
        elif not traces:
            continue
        elif m := re.match(r"^    pid (\d+).*?, (\d+) events, (\d+) phases, (\d+) annotations", line):
            traces[-1].update(pid=int(m[1]), events=int(m[2]), phase_count=int(m[3]), annotations=int(m[4]))
        elif m := re.match(r"^    device (-?\d+)", line):
            device = int(m[1])
            traces[-1]["devices"][device] = {}
        elif device is not None and (m := re.match(r"^      peak reserved .*\((\d+) B\)", line)):
            traces[-1]["devices"][device]["peak_reserved"] = int(m[1])
        elif device is not None and (m := re.match(r"^      peak live .*\((\d+) B\)", line)):
            traces[-1]["devices"][device]["peak_live"] = int(m[1])
        elif device is not None and (m := re.match(r"^      events\s+(\d+)\s+\((.*)\)", line)):
            traces[-1]["devices"][device]["events"] = int(m[1])
            traces[-1]["devices"][device]["kinds"] = m[2]
        elif m := re.match(r"^    phase names\s+(.*)", line):
            traces[-1]["phases"] = m[1]
        elif "GAPS" in line:
            traces[-1]["gaps"].append(line.strip())
    notes = [l for l in text.splitlines() if l.startswith("memscope:") or l.startswith("memscope-cli record:")]
    return {"text": text, "traces": traces, "notes": notes}

def mib(b):
    return "n/a" if b is None else f"{b / 2**20:,.1f} MiB"

def median_ms(result):
    return None if not result or result.get("step_time_median_s") is None else result["step_time_median_s"] * 1e3

ok = True
for label, base_name, traced_name in (("caching allocator (segments)", "plain", "recorded"),
                                      ("--tensor-level (no caching)", "plain-nocache", "recorded-tensor")):
    base, traced, rec = load_json(base_name), load_json(traced_name), parse_record(traced_name)
    rc = open(os.path.join(work, traced_name + ".rc")).read().strip()
    print(f"\n-- {label}")
    print(f"   record exit code         {rc}")
    for note in rec["notes"]:
        print(f"   {note}")
    if not rec["traces"]:
        print("   NO TRACE was written: see", os.path.join(work, traced_name + ".txt"))
        ok = False
        continue
    # The training process is the one with device 0 events (torch may start helpers).
    main = max(rec["traces"], key=lambda t: t.get("events", 0))
    dev0 = main["devices"].get(0, {})
    torch_reserved = traced["max_memory_reserved"] if traced else None
    trace_reserved = dev0.get("peak_reserved")
    print(f"   traces                   {len(rec['traces'])} (main: {main['path']})")
    print(f"   events                   {main.get('events')}  device 0: {dev0.get('events')} ({dev0.get('kinds', '')})")
    print(f"   peak reserved, trace     {mib(trace_reserved)}  ({trace_reserved} B)")
    print(f"   peak reserved, torch     {mib(torch_reserved)}  ({torch_reserved} B)  torch.cuda.max_memory_reserved()")
    if trace_reserved and torch_reserved:
        diff = trace_reserved - torch_reserved
        print(f"   difference               {mib(diff)} ({100 * diff / torch_reserved:+.2f}%)"
              "  (the trace counts every CUDA allocation of the process, torch only its allocator's)")
    if "peak_live" in dev0 and traced:
        print(f"   peak live, trace         {mib(dev0['peak_live'])}   torch max_memory_allocated {mib(traced['max_memory_allocated'])}")
    print(f"   NVTX phases              {main.get('phase_count')} ({main['phases']})")
    print(f"   annotations              {main.get('annotations')}")
    for gap in main["gaps"]:
        print(f"   {gap}")
    b, t = median_ms(base), median_ms(traced)
    if b and t:
        overhead = 100 * (t - b) / b
        verdict = "within the 3% target" if overhead <= 3 else "ABOVE the 3% target"
        print(f"   step time (median)       {t:.2f} ms traced vs {b:.2f} ms plain: {overhead:+.2f}% ({verdict})")
    else:
        print("   step time                n/a (a run failed; see its .txt)")
    if not dev0.get("events") or not main.get("phase_count"):
        ok = False

print(f"\nwork folder: {work}")
print("GPU CHECK", "PASSED" if ok else "FAILED", "(traces with CUDA memory events and NVTX phases)")
sys.exit(0 if ok else 1)
PY
