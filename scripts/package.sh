#!/usr/bin/env bash
# Builds the Debian package from the release build: memscope_<version>_amd64.deb
# in build/package/ (or --out DIR). Install it with
#   sudo apt install ./build/package/memscope_*.deb
#   scripts/package.sh [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/package
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2;;
    -h|--help) sed -n '2,5p' "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 1;;
  esac
done
for tool in dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "memscope: $tool not found (apt-get install dpkg-dev)" >&2; exit 1; }
done

scripts/build.sh
mkdir -p "$out"
rm -f "$out"/memscope_*.deb
cpack --config build/CPackConfig.cmake -B "$out" >"$out/cpack.log" 2>&1 || { cat "$out/cpack.log"; exit 1; }
rm -rf "$out/_CPack_Packages"  # the staging tree
deb=$(ls "$out"/memscope_*.deb)
echo "memscope: $deb"
dpkg-deb --field "$deb" Package Version Architecture Installed-Size Depends
echo "install it with: sudo apt install ./$deb"
