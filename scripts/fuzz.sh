#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (libraries instrumented too) and runs
# each for a while, seeded from the real fixtures and small generated inputs.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [BUILD_DIR]
# Crashes are written to BUILD_DIR/fuzz-artifacts/; the summary goes to stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-120}
build=${2:-$here/build-fuzz}
fixtures=${MEMSCOPE_FIXTURES_DIR:-$here/../shared/fixtures}
jobs=${JOBS:-2}

cmake -S "$here" -B "$build" -G Ninja \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMEMSCOPE_BUILD_FUZZERS=ON -DMEMSCOPE_SANITIZE=ON -DMEMSCOPE_BUILD_TESTS=ON \
  -DMEMSCOPE_BUILD_BENCHMARKS=OFF -DMEMSCOPE_BUILD_GUI=OFF -DMEMSCOPE_BUILD_TRAINER=OFF \
  -DMEMSCOPE_BUILD_CUPTI=OFF -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
ninja -C "$build" -j"$jobs" fuzz_snapshot fuzz_memory_viz_html fuzz_kineto fuzz_memory_timeline fuzz_native memscope-cli

seeds=$build/fuzz-seeds
rm -rf "$seeds" && mkdir -p "$seeds"/{snapshot,memory_viz_html,kineto,memory_timeline,native}
python3 "$here/tests/fuzz/make_seeds.py" "$seeds"
# Real files: the small snapshots whole; the kineto trace as a decompressed head.
for f in settings_no_trace__DocuBox.pickle legacy_block_history_oom__LLM-inference.pickle \
         toplevel_list_segments_only__LayoutEditing.pkl; do
  cp "$fixtures/snapshots/$f" "$seeds/snapshot/"
done
# MemoryViz pages around the snapshot seeds, as torch's _format_viz writes them.
python3 - "$seeds/snapshot" "$seeds/memory_viz_html" <<'PY'
import base64, json, pathlib, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for p in sorted(src.iterdir())[:8]:
    b = p.read_bytes()
    b += b"\0" * (3 - len(b) % 3)
    files = json.dumps([{"name": "snapshot.pickle", "base64": base64.b64encode(b).decode()}])
    (dst / (p.stem + ".html")).write_text(
        '<!DOCTYPE html>\n<html>\n<body>\n<script type="module">\n'
        'import {add_local_files} from "MemoryViz.js"\n'
        f"const local_files = {files}\nadd_local_files(local_files, 'Active Memory Timeline')\n"
        "</script>\n</body>\n")
PY
zcat "$fixtures/profiler/hta_kineto_trace_with_memory_events.json.gz" | head -c 60000 > "$seeds/kineto/hta_head.json" || true
# Native traces made by converting snapshots (the native writer is core's).
"$build/bin/memscope-cli" convert "$fixtures/snapshots/settings_no_trace__DocuBox.pickle" "$seeds/native/a.memscope" 2>/dev/null || true
"$build/bin/memscope-cli" convert "$seeds/snapshot/small_p4.pickle" "$seeds/native/b.memscope" 2>/dev/null || true

artifacts=$build/fuzz-artifacts
rm -rf "$artifacts" && mkdir -p "$artifacts"
status=0
for target in snapshot memory_viz_html kineto memory_timeline native; do
  corpus=$build/fuzz-corpus/$target
  mkdir -p "$corpus"
  log=$build/fuzz-$target.log
  set +e
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  "$build/bin/fuzz_$target" "$corpus" "$seeds/$target" -max_total_time="$seconds" \
    -max_len=262144 -rss_limit_mb=2048 -timeout=20 -artifact_prefix="$artifacts/$target-" \
    -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  crashes=$(ls "$artifacts" | grep -c "^$target-" || true)
  echo "fuzz_$target: exit $rc, ${execs:-?} executions, $crashes crash/leak/timeout artifacts (log: $log)"
  [ "$rc" -ne 0 ] && status=1
done
exit $status
