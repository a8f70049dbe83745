#!/usr/bin/env bash
# The style checks CI runs (scripts/run-tests.sh runs this after the release
# build):
#   1. clang-format: every tracked C/C++ file is formatted as .clang-format says;
#   2. clang-tidy: core's sources pass the checks .clang-tidy keeps, compiled
#      as the build's compile_commands.json says (build/ by default).
# Files are found, not listed: git ls-files for the first, the compile
# database for the second, so moved and new files are checked as they land.
#   scripts/check-style.sh [--format-only | --tidy-only | --fix] [BUILD_DIR]
#   --fix: reformat the files clang-format would change, then check.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=all
build=build
for arg in "$@"; do
  case "$arg" in
    --format-only) mode=format;;
    --tidy-only) mode=tidy;;
    --fix) mode=fix;;
    -h|--help) sed -n '2,10p' "$0"; exit 0;;
    -*) echo "unknown argument: $arg" >&2; exit 2;;
    *) build=$arg;;
  esac
done
jobs=${MEMSCOPE_JOBS:-$(nproc)}

tool() {  # the first of NAME-14, NAME on PATH
  local t
  for t in "$1-14" "$1"; do
    if command -v "$t" >/dev/null; then echo "$t"; return 0; fi
  done
  echo "memscope: $1 not found (scripts/install-deps.sh installs it)" >&2
  return 1
}

sources() {  # NUL-separated tracked C/C++ files
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -- '*.c' '*.cc' '*.cpp' '*.cxx' '*.h' '*.hh' '*.hpp' '*.hxx'
  else
    find app core plugins profiler tests \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' \
      -o -name '*.cxx' -o -name '*.h' -o -name '*.hh' -o -name '*.hpp' -o -name '*.hxx' \) -print0
  fi
}

check_format() {
  local cf
  cf=$(tool clang-format)
  if [ "$1" = fix ]; then sources | xargs -0 -r "$cf" -i; fi
  local count
  count=$(sources | tr -cd '\0' | wc -c)
  if ! sources | xargs -0 -r "$cf" --dry-run --Werror; then
    echo "memscope: clang-format: the files above differ from .clang-format's style;" \
      "scripts/check-style.sh --fix reformats them" >&2
    return 1
  fi
  echo "memscope: clang-format: $count files formatted as .clang-format says"
}

check_tidy() {
  local ct db="$build/compile_commands.json"
  ct=$(tool clang-tidy)
  if [ ! -f "$db" ]; then
    echo "memscope: $db is missing: configure a build first (cmake --preset release)" >&2
    return 1
  fi
  # core's own sources, as the compile database names them.
  local files
  files=$(python3 - "$db" "$PWD" <<'PY'
import json, os, sys
db, root = sys.argv[1], os.path.realpath(sys.argv[2])
core = os.path.join(root, 'core') + os.sep
seen = set()
for entry in json.load(open(db)):
    path = os.path.realpath(os.path.join(entry['directory'], entry['file']))
    if path.startswith(core) and path.endswith('.cpp') and path not in seen:
        seen.add(path)
        print(os.path.relpath(path, root))
PY
)
  if [ -z "$files" ]; then
    echo "memscope: $db lists no source of core" >&2
    return 1
  fi
  local count
  count=$(printf '%s\n' "$files" | wc -l)
  # rapidjson's iterators trip clang's C++20 reversed-operator warning, which
  # GCC (the build's compiler) does not have.
  if ! printf '%s\n' "$files" | xargs -r -P "$jobs" -n 4 "$ct" -p "$build" --quiet \
      --extra-arg=-Wno-ambiguous-reversed-operator --extra-arg=-Wno-unknown-warning-option \
      2> >(grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing' >&2); then
    echo "memscope: clang-tidy: findings above (.clang-tidy says which checks are kept)" >&2
    return 1
  fi
  echo "memscope: clang-tidy: $count core sources pass .clang-tidy's checks"
}

status=0
case "$mode" in
  format) check_format check || status=1;;
  tidy) check_tidy || status=1;;
  fix) check_format fix || status=1;;
  all)
    check_format check || status=1
    check_tidy || status=1;;
esac
exit $status
