#!/usr/bin/env bash
# The main job: set up a fresh Debian 12 machine, build memscope, record the four
# checkpoint policies with the reference trainer on CPU, and open their
# comparison in the GUI (without a display: write it as an image and print the
# table).
#   scripts/setup-and-run.sh [--model mlp|gpt] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
model=mlp
out=runs
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2;;
    --out) out=$2; shift 2;;
    -h|--help) sed -n '2,7p' "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 1;;
  esac
done

scripts/install-deps.sh
echo "memscope: setup took $SECONDS s"
start=$SECONDS
scripts/build.sh
echo "memscope: build took $((SECONDS - start)) s"

bin=build/bin
if [ ! -x "$bin/memscope-train" ]; then
  echo "memscope: the reference trainer was not built (see the feature summary above)" >&2
  exit 1
fi
mkdir -p "$out"
rm -f "$out/$model"-*.memscope  # only what this job wrote before
start=$SECONDS
"$bin/memscope-train" --model "$model" --policy all --preset quick --out "$out"
echo "memscope: the trainer's runs took $((SECONDS - start)) s"
# In the policies' usual order, full (the baseline) first.
traces=()
for policy in full block selective opt-in-bwd; do
  if [ -f "$out/$model-$policy.memscope" ]; then traces+=("$out/$model-$policy.memscope"); fi
done
if [ ${#traces[@]} -eq 0 ]; then
  echo "memscope: the trainer wrote no traces to $out" >&2
  exit 1
fi

# The comparison headless, as a server or CI sees it: the same table as the GUI's.
echo "memscope: the policies compared (whole run, then the forward and backward peaks):"
"$bin/memscope-cli" compare "${traces[@]}"
"$bin/memscope-cli" compare --phase forward "${traces[@]}"
"$bin/memscope-cli" compare --phase backward "${traces[@]}"

if [ -x "$bin/memscope" ]; then
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    exec "$bin/memscope" --compare "${traces[@]}"
  fi
  QT_QPA_PLATFORM=offscreen "$bin/memscope" --screenshot "$out/compare.png" --compare "${traces[@]}" >/dev/null
  echo "memscope: no display; the comparison is in $out/compare.png"
else
  echo "memscope: the GUI was not built (see the feature summary above)"
fi
