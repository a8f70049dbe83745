#!/usr/bin/env bash
# The Debian package as a user gets it. Builds it with cpack, checks its file
# list and its Depends (against the libraries its binaries need), unpacks it
# into a scratch root (dpkg -x) and runs what it installed there: summary and
# convert on a snapshot made here, the GUI's screenshot, the trainer, record,
# the man pages, the file types, the desktop file and the AppStream metadata.
#   package_test.sh CPACK BUILD_DIR VERSION PROGRAMS LIBRARIES
# PROGRAMS and LIBRARIES: what this build made (comma-separated), and so what
# the package must hold. Exits 77 (skipped) when a packaging tool is missing,
# except under CI, where the setup installs them all.
set -euo pipefail
# Output is captured before it is searched: `cmd | grep -q` fails under
# pipefail when grep exits early and cmd dies of SIGPIPE.
cpack=$1 build=$2 version=$3
IFS=, read -r -a programs <<<"$4"
IFS=, read -r -a libraries <<<"${5:-}"

fail() { echo "FAIL: $*" >&2; exit 1; }
need() {  # need TOOL PACKAGE
  command -v "$1" >/dev/null && return
  [ -n "${CI:-}" ] && fail "$1 not found (apt-get install $2; scripts/install-deps.sh does)"
  echo "SKIP: $1 not found (apt-get install $2)"
  exit 77
}
need dpkg-deb dpkg; need dpkg-shlibdeps dpkg-dev; need readelf binutils
need desktop-file-validate desktop-file-utils; need update-desktop-database desktop-file-utils
need appstreamcli appstream; need update-mime-database shared-mime-info
need xdg-mime xdg-utils; need mimetype libfile-mimeinfo-perl; need man man-db; need python3 python3
has() { local p; for p in "${programs[@]}" "${libraries[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== cpack"
"$cpack" --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log"; fail "cpack failed"; }
deb=$tmp/pkg/memscope_${version}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || fail "no $(basename "$deb"); cpack wrote: $(ls "$tmp/pkg")"
ls -l "$deb"

echo "== file list"
dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/files"
expect=(/usr/share/applications/org.memscope.memscope.desktop
        /usr/share/icons/hicolor/scalable/apps/memscope.svg
        /usr/share/mime/packages/memscope.xml
        /usr/share/metainfo/org.memscope.memscope.metainfo.xml)
for p in "${programs[@]}"; do expect+=("/usr/bin/$p" "/usr/share/man/man1/$p.1.gz"); done
for l in "${libraries[@]}"; do expect+=("/usr/lib/lib$l.so"); done
has memscope_torch_capture && expect+=(/usr/share/memscope/pyhook/sitecustomize.py
                                        /usr/share/memscope/pyhook/memscope_hook/__init__.py)
for f in "${expect[@]}"; do grep -qxF "$f" "$tmp/files" || fail "the package lacks $f"; done
# Only the programs: no test or benchmark binary is installed.
bins=$(grep '^/usr/bin/.' "$tmp/files" | sort | tr '\n' ' ')
want=$(printf '/usr/bin/%s\n' "${programs[@]}" | sort | tr '\n' ' ')
[ "$bins" = "$want" ] || fail "/usr/bin holds '$bins', expected '$want'"
echo "$(wc -l <"$tmp/files") entries; all ${#expect[@]} expected files present"

echo "== fields"
dpkg-deb --field "$deb" Package Version Architecture Depends Recommends
depends=$(dpkg-deb --field "$deb" Depends)
[ "$(dpkg-deb --field "$deb" Version)" = "$version" ] || fail "version is not $version"
grep -q "This package contains" <<<"$(dpkg-deb --field "$deb" Description)" || fail "the description does not say what the package contains"

echo "== unpack"
root=$tmp/root
dpkg -x "$deb" "$root"
bin=$root/usr/bin

# Depends, from the binaries: every library a packaged binary needs belongs to a
# Debian package that Depends names (dpkg-shlibdeps' work), except ours and
# CUDA's, which no Debian package provides.
echo "== Depends against the binaries' libraries"
owners=""
for f in $(grep -E '^/usr/(bin/.|lib/.*\.so$)' "$tmp/files"); do
  links=$(LD_LIBRARY_PATH="$root/usr/lib" ldd "$root$f")
  if grep -q "not found" <<<"$links"; then fail "$f: $(grep "not found" <<<"$links")"; fi
  # Only what the binary links itself: Depends does not name its libraries' own.
  needed=" $(readelf -d "$root$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ') "
  while read -r name _ path _; do
    [[ "$needed" == *" $name "* ]] || continue
    case "$path" in "$root"/*|/usr/local/cuda*|*/cuda*/*) continue;; esac
    [ -e "$path" ] || fail "$f needs $name, which is not found ($path)"
    owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null ||
            dpkg -S "${path#/usr}" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null || true)
    owner=${owner%%:*}
    [ -n "$owner" ] || fail "$f needs $path, which no Debian package owns"
    owners+="$owner"$'\n'
  done < <(grep '=> /' <<<"$links" || true)
done
depends_names=$(sed 's/([^)]*)//g; s/[|,]/\n/g' <<<"$depends" | tr -d ' ')
for owner in $(sort -u <<<"$owners"); do
  grep -qxF "$owner" <<<"$depends_names" || fail "Depends lacks $owner: $depends"
done
echo "Depends names all $(sort -u <<<"$owners" | grep -c .) packages the binaries link"

echo "== the installed programs"
"$bin/memscope-cli" --version
# A snapshot as PyTorch pickles it: one 2 MiB segment, two 1 MiB blocks.
python3 - "$tmp/snap.pickle" <<'PY'
import pickle, sys
base, mib = 0x7F0000000000, 1 << 20
frames = [{"filename": "train.py", "line": 3, "name": "forward"}]
trace = [
    {"action": "segment_alloc", "addr": base, "size": 2 * mib, "stream": 0, "time_us": 1, "frames": frames},
    {"action": "alloc", "addr": base, "size": mib, "stream": 0, "time_us": 2, "frames": frames},
    {"action": "alloc", "addr": base + mib, "size": mib, "stream": 0, "time_us": 3, "frames": frames},
    {"action": "free_requested", "addr": base + mib, "size": mib, "stream": 0, "time_us": 4, "frames": frames},
    {"action": "free_completed", "addr": base + mib, "size": mib, "stream": 0, "time_us": 5, "frames": frames},
]
segment = {"device": 0, "address": base, "total_size": 2 * mib, "allocated_size": mib,
           "active_size": mib, "requested_size": mib, "stream": 0, "segment_type": "large",
           "blocks": [{"address": base, "size": mib, "requested_size": mib, "state": "active_allocated", "frames": frames},
                      {"address": base + mib, "size": mib, "requested_size": 0, "state": "inactive", "frames": []}]}
pickle.dump({"segments": [segment], "device_traces": [trace]}, open(sys.argv[1], "wb"), protocol=4)
PY
peak() {  # the largest peak_active_bytes in `summary --json FILE`
  "$bin/memscope-cli" summary --json "$1" | python3 -c '
import json, sys
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "peak_active_bytes": yield x
            yield from walk(x)
    elif isinstance(v, list):
        for x in v: yield from walk(x)
print(max(walk(json.load(sys.stdin)), default=-1))'
}
[ "$(peak "$tmp/snap.pickle")" = 2097152 ] || fail "summary of the snapshot: peak $(peak "$tmp/snap.pickle"), not 2 MiB"
"$bin/memscope-cli" convert "$tmp/snap.pickle" "$tmp/trace.memscope"
[ "$(peak "$tmp/trace.memscope")" = 2097152 ] || fail "summary of the converted trace: peak is not 2 MiB"
"$bin/memscope-cli" convert "$tmp/trace.memscope" "$tmp/exported.pickle"
"$bin/memscope-cli" summary "$tmp/trace.memscope"

if has memscope; then
  QT_QPA_PLATFORM=offscreen "$bin/memscope" --screenshot "$tmp/shot.png" "$tmp/trace.memscope" >/dev/null
  [ "$(head -c 8 "$tmp/shot.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "the GUI's screenshot is not a PNG"
  echo "memscope --screenshot: $(stat -c %s "$tmp/shot.png") bytes"
fi
if has memscope-train; then
  "$bin/memscope-train" --model mlp --policy full --preset quick --steps 1 --out "$tmp/runs" >/dev/null
  p=$(peak "$tmp/runs/mlp-full.memscope")
  [ "$p" -gt 0 ] || fail "the installed trainer's trace has no peak"
  echo "memscope-train: mlp-full peak $p bytes"
fi
torch_python=""
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import torch' 2>/dev/null; then torch_python=$py; break; fi
done
if has memscope_torch_capture && [ -n "$torch_python" ]; then
  "$bin/memscope-cli" record -o "$tmp/rec" -- "$torch_python" -c 'import torch; a = torch.ones(1 << 22); b = a * 2' >"$tmp/record.log" 2>&1 ||
    { cat "$tmp/record.log"; fail "the installed record failed"; }
  recorded=("$tmp"/rec/*.memscope)
  rec=${recorded[0]}
  p=$(peak "$rec")
  [ "$p" -ge $((32 << 20)) ] || { cat "$tmp/record.log"; fail "the recorded job peaks at $p bytes, under its two 16 MiB tensors"; }
  echo "memscope-cli record (installed hook and capture library): peak $p bytes"
elif has memscope_torch_capture; then
  echo "record not tried: no python3 with torch here"
fi

echo "== man pages"
export MANPATH=$root/usr/share/man MANWIDTH=100 LC_ALL=C.UTF-8
for p in "${programs[@]}"; do
  grep -q "^NAME" <<<"$(man -P cat "$p" 2>/dev/null)" || fail "man $p shows no page"
done
# One page per subcommand that memscope-cli --help lists, so a new command
# without a page fails here.
subcommands=$(awk 'tolower($0) ~ /^subcommands:/ {on=1; next} on && !NF {on=0} on {print $1}' <<<"$("$bin/memscope-cli" --help)")
[ -n "$subcommands" ] || fail "memscope-cli --help lists no subcommands"
for s in $subcommands; do
  grep -q "memscope-cli $s" <<<"$(man -P cat "memscope-cli-$s" 2>/dev/null)" || fail "man memscope-cli-$s is missing or does not describe it"
done
grep -q "memscope-cli-whatif" <<<"$(man -P cat memscope-cli 2>/dev/null)" || fail "man memscope-cli does not point to its subcommands' pages"
echo "pages for ${programs[*]} and memscope-cli's $(wc -w <<<"$subcommands") subcommands"

echo "== desktop file and metadata"
desktop-file-validate "$root/usr/share/applications/org.memscope.memscope.desktop"
grep -q '^MimeType=.*application/x-memscope-trace' "$root/usr/share/applications/org.memscope.memscope.desktop" || fail "the desktop file does not name the trace type"
if grep -q 'application/octet-stream' "$root/usr/share/applications/org.memscope.memscope.desktop"; then fail "the desktop file claims application/octet-stream"; fi
appstreamcli validate --no-net "$root/usr/share/metainfo/org.memscope.memscope.metainfo.xml"

echo "== file types"
update-mime-database "$root/usr/share/mime" 2>/dev/null
update-desktop-database "$root/usr/share/applications"
export XDG_DATA_DIRS=$root/usr/share:/usr/share XDG_DATA_HOME=$tmp/home XDG_CONFIG_HOME=$tmp/config
unset XDG_CURRENT_DESKTOP KDE_FULL_SESSION GNOME_DESKTOP_SESSION_ID DESKTOP_SESSION
cp "$tmp/trace.memscope" "$tmp/trace-without-extension"
python3 -c 'import pickle, sys; pickle.dump({"weights": [1, 2]}, open(sys.argv[1], "wb"), protocol=4)' "$tmp/other.pickle"
filetype() { xdg-mime query filetype "$1" 2>/dev/null; }
check_type() {
  local got; got=$(filetype "$1")
  [ "$got" = "$2" ] || fail "xdg-mime query filetype $(basename "$1"): '$got', expected '$2'"
  echo "$(basename "$1"): $got"
}
check_type "$tmp/trace.memscope" application/x-memscope-trace
check_type "$tmp/trace-without-extension" application/x-memscope-trace
check_type "$tmp/snap.pickle" application/x-pytorch-memory-snapshot
check_type "$tmp/exported.pickle" application/x-pytorch-memory-snapshot
[ "$(filetype "$tmp/other.pickle")" != application/x-pytorch-memory-snapshot ] || fail "a pickle that is no snapshot is taken for one"
echo "other.pickle: $(filetype "$tmp/other.pickle")"
for type in application/x-memscope-trace application/x-pytorch-memory-snapshot; do
  app=$(xdg-mime query default "$type")
  [ "$app" = org.memscope.memscope.desktop ] || fail "xdg-mime query default $type: '$app'"
done
echo "both types open in org.memscope.memscope.desktop"

# Whether apt could install it here: its Depends resolve (a simulation, nothing
# is installed). Needs package lists; without them this is only reported.
if sim=$(apt-get install -s "$deb" 2>&1); then
  echo "apt-get install -s: the dependencies resolve"
elif grep -q "unmet dependencies\|Unmet dependencies" <<<"$sim"; then
  echo "$sim" | tail -20; fail "apt cannot satisfy the package's Depends"
else
  echo "apt-get install -s could not run here (no package lists?); not checked"
fi
echo "PASS"
