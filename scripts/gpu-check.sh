#!/usr/bin/env bash
# GPU check of `memscope-cli record` (docs/GPU_CHECK.md): runs plain PyTorch
# workloads with and without recording and prints a PASS/FAIL table.
#
#   scripts/gpu-check.sh [--bundle DIR] [--fake] [--work DIR]
#
# --bundle DIR  a record-only bundle (scripts/make-record-bundle.sh), for a
#               machine without Debian's -dev packages; default: build one
#               here (needs the CUDA toolkit and the -dev packages).
# --fake        no GPU: run the workloads on the CPU (what can run does; the
#               CUDA-only checks say SKIP). CI-like machines use this.
# --work DIR    where runs, traces and results go (default: a new /tmp folder).
# Environment: PYTHON (default python3 that imports torch), RUN_TIMEOUT (240 s).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle="" fake="" work=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --bundle) bundle=$2; shift 2 ;;
        --fake) fake=--fake; shift ;;
        --work) work=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
work=${work:-$(mktemp -d /tmp/memscope-gpu-check.XXXXXX)}
mkdir -p "$work"

python=${PYTHON:-}
if [[ -z $python ]]; then
    for candidate in python3 /usr/bin/python3; do
        if "$candidate" -c "import torch" 2>/dev/null; then python=$candidate; break; fi
    done
fi
[[ -n $python ]] || { echo "gpu-check: no python3 with PyTorch found (set PYTHON)" >&2; exit 2; }

echo "== machine"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$python" -c "import torch, sys; print('python', sys.version.split()[0], '| torch', torch.__version__, '| CUDA', torch.version.cuda, '| GPU', torch.cuda.is_available())"

if [[ -z $bundle ]]; then
    echo "== bundle"
    bundle=$work/bundle
    "$repo/scripts/make-record-bundle.sh" "$bundle"
fi
cli=$bundle/bin/memscope-cli
echo "== bundle check: $cli"
if ! "$cli" --version; then
    echo "gpu-check: the bundle's memscope-cli does not run here:" >&2
    ldd "$cli" >&2 || true
    exit 1
fi
ldd "$bundle/lib/libmemscope_cupti.so" | grep -E "not found|cupti|zstd|stdc" || true

echo "== checks (work folder $work)"
"$python" "$repo/scripts/gpu_check.py" --cli "$cli" --work "$work" --python "$python" \
    --timeout "${RUN_TIMEOUT:-240}" $fake
