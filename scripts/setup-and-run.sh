#!/usr/bin/env bash
# The main job: set up a fresh Debian 12 machine, build memscope, record the four
# checkpoint policies with the reference trainer on CPU at two sizes (quick:
# activations dominate, what block and selective lower; wide: gradients and the
# optimizer step dominate, what opt-in-bwd lowers), print their comparisons, and
# open the first in the GUI (without a display: write it as an image).
#   scripts/setup-and-run.sh [--model mlp|gpt] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
model=mlp
out=runs
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2;;
    --out) out=$2; shift 2;;
    -h|--help) sed -n '2,8p' "$0"; exit 0;;
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
mkdir -p "$out" "$out/wide"
rm -f "$out/$model"-*.memscope "$out/wide/$model"-*.memscope  # only what this job wrote before
start=$SECONDS
# quick: activations dominate memory, which block and selective lower.
"$bin/memscope-train" --model "$model" --policy all --preset quick --out "$out"
# wide: a wider model at batch 1, where gradients, Adam's state and its step's
# scratch dominate, which opt-in-bwd lowers (as in PyTorch's optimizer-in-backward tutorial).
"$bin/memscope-train" --model "$model" --policy all --preset wide --out "$out/wide"
echo "memscope: the trainer's runs took $((SECONDS - start)) s"
# The traces in a folder, in the policies' usual order, full (the baseline) first.
traces_in() {
  traces=()
  for policy in full block selective opt-in-bwd; do
    if [ -f "$1/$model-$policy.memscope" ]; then traces+=("$1/$model-$policy.memscope"); fi
  done
  if [ ${#traces[@]} -eq 0 ]; then
    echo "memscope: the trainer wrote no traces to $1" >&2
    exit 1
  fi
}

# The comparisons headless, as a server or CI sees them: the same table as the
# GUI's, with a line under each run on what changed and why.
traces_in "$out"
echo "memscope: the quick preset's policies compared (whole run, then the forward and backward peaks; activations dominate):"
"$bin/memscope-cli" compare "${traces[@]}"
"$bin/memscope-cli" compare --phase forward "${traces[@]}"
"$bin/memscope-cli" compare --phase backward "${traces[@]}"
traces_in "$out/wide"
echo "memscope: the wide preset's policies compared (whole run; gradients and the optimizer step dominate):"
"$bin/memscope-cli" compare "${traces[@]}"
traces_in "$out"  # the GUI opens the quick preset's comparison

if [ -x "$bin/memscope" ]; then
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    exec "$bin/memscope" --compare "${traces[@]}"
  fi
  QT_QPA_PLATFORM=offscreen "$bin/memscope" --screenshot "$out/compare.png" --compare "${traces[@]}" >/dev/null
  echo "memscope: no display; the comparison is in $out/compare.png"
else
  echo "memscope: the GUI was not built (see the feature summary above)"
fi
