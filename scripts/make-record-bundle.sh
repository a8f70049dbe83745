#!/usr/bin/env bash
# Builds a relocatable, record-only memscope bundle for a machine that has a
# GPU, its driver and PyTorch but no Debian -dev packages (the GPU check's
# device machine): memscope-cli, the CUPTI tracer, core, the Python hook, and
# every shared library they need beyond glibc, found with ldd and copied
# beside them (RPATH $ORIGIN/../lib and $ORIGIN find them there).
#
#   scripts/make-record-bundle.sh [OUT_DIR]     (default: build-bundle/dist)
#
# Environment: BUILD_DIR (default build-bundle), JOBS (default nproc).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$repo/build-bundle}
out=${1:-$build/dist}
jobs=${JOBS:-$(nproc)}

mkdir -p "$build"
generator="Unix Makefiles"
command -v ninja >/dev/null && generator=Ninja
cmake -S "$repo" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
    -DMEMSCOPE_BUILD_GUI=OFF -DMEMSCOPE_BUILD_TRAINER=OFF -DMEMSCOPE_BUILD_TESTS=OFF \
    -DMEMSCOPE_BUILD_BENCHMARKS=OFF -DMEMSCOPE_BUILD_CUPTI=ON >"$build/configure.log" 2>&1 \
    || { echo "make-record-bundle: cmake failed, see $build/configure.log" >&2; exit 1; }
cmake --build "$build" --target memscope-cli memscope_cupti memscope_pyhook -j "$jobs" >/dev/null \
    || { echo "make-record-bundle: build failed" >&2; exit 1; }
[[ -f $build/lib/libmemscope_cupti.so ]] \
    || { echo "make-record-bundle: the CUPTI tracer was not built (no CUDA toolkit?)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/share/memscope"
cp "$build/bin/memscope-cli" "$out/bin/"
cp -a "$build"/lib/libmemscope_core.so* "$build/lib/libmemscope_cupti.so" "$out/lib/"
cp -r "$build/share/memscope/pyhook" "$out/share/memscope/"
find "$out/share" -name __pycache__ -prune -exec rm -rf {} +

# Everything the binaries load except glibc itself (the target has its own,
# and a copied one would not match its loader).
is_glibc() {
    case $(basename "$1") in
        libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libutil.so*|ld-linux*|libresolv.so*) return 0 ;;
    esac
    return 1
}
for binary in "$out/bin/memscope-cli" "$out/lib/libmemscope_cupti.so" "$out/lib/libmemscope_core.so"; do
    ldd "$binary" | awk '/=> \// { print $3 }' | while read -r lib; do
        is_glibc "$lib" && continue
        case $(basename "$lib") in libmemscope_*) continue ;; esac
        [[ -e $out/lib/$(basename "$lib") ]] || cp -L "$lib" "$out/lib/"
    done
done
cp "$repo/scripts/gpu_check.py" "$repo/scripts/gpu_check_workload.py" "$out/bin/"
echo "make-record-bundle: $out ($(du -sh "$out" | cut -f1)):"
ls "$out/lib"
