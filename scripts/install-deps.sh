#!/usr/bin/env bash
# Installs the Debian 12 packages memscope builds with (only from Debian's
# archive; nothing is downloaded from anywhere else). Uses sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config python3
  libgtest-dev zlib1g-dev libzstd-dev nlohmann-json3-dev rapidjson-dev libcli11-dev
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6
  # LibTorch, and OpenBLAS, which it picks up through the BLAS alternatives
  # (about 40 times faster than the reference BLAS, no rebuild)
  libtorch-dev libopenblas0-pthread
  # PyTorch for Python: the tests open memscope's exports with PyTorch's own
  # memory_viz module
  python3-torch
  xvfb xauth
  # The Debian package (scripts/package.sh) and its test: man pages from
  # --help, Depends from the binaries, and the desktop integration checked
  dpkg-dev help2man man-db desktop-file-utils appstream shared-mime-info xdg-utils
  libfile-mimeinfo-perl
  clang libclang-rt-dev
  # The style checks (scripts/check-style.sh, run by scripts/run-tests.sh)
  clang-format clang-tidy
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "memscope: all ${#packages[@]} Debian packages are installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "memscope: not root and no sudo: install as root: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "memscope: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
