#!/usr/bin/env bash
# Regenerates the README's screenshot, docs/images/compare.png: the reference
# trainer's quick preset under the four checkpoint policies, opened in the GUI's
# compare view offscreen, as scripts/setup-and-run.sh does at its end on a
# machine without a display. Needs a built tree (scripts/build.sh or
# scripts/setup-and-run.sh first); builds nothing itself.
#   scripts/make-screenshot.sh [--model mlp|gpt] [--image FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
model=mlp
image=docs/images/compare.png
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2;;
    --image) image=$2; shift 2;;
    -h|--help) sed -n '2,7p' "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 1;;
  esac
done

bin=${MEMSCOPE_BIN:-build/bin}
for program in memscope-train memscope; do
  if [ ! -x "$bin/$program" ]; then
    echo "memscope: $bin/$program is not built; run scripts/build.sh (or scripts/setup-and-run.sh) first" >&2
    exit 1
  fi
done

# The traces are only needed for the picture: a scratch folder, removed at exit.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin/memscope-train" --model "$model" --policy all --preset quick --out "$out" >/dev/null
# In the policies' usual order, full (the baseline) first.
traces=()
for policy in full block selective opt-in-bwd; do
  if [ -f "$out/$model-$policy.memscope" ]; then traces+=("$out/$model-$policy.memscope"); fi
done
if [ ${#traces[@]} -eq 0 ]; then
  echo "memscope: the trainer wrote no traces" >&2
  exit 1
fi

mkdir -p "$(dirname "$image")"
QT_QPA_PLATFORM=offscreen "$bin/memscope" --screenshot "$image" --compare "${traces[@]}" >/dev/null
echo "memscope: wrote $image (${#traces[@]} runs of the $model quick preset)"
