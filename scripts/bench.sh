#!/usr/bin/env bash
# Runs every benchmark at its default size and prints one table at the end:
#   | what | memscope | peer | peer figure | target | met? |
# with each peer measured in the same run (CPython pickle.load for the snapshot
# import, json.load for the kineto import) and the targets of issue 29.
#
#   scripts/bench.sh [--quick] [--only NAME] [--keep] [--growth] [--help]
#
# Data (generated snapshots, a kineto trace) goes to ${MEMSCOPE_BENCH_DIR:-a
# mktemp -d folder}, removed at the end unless --keep. Binaries come from
# ${MEMSCOPE_BIN:-build/bin} (scripts/build.sh), Python from ${PYTHON:-python3}.
# MEMSCOPE_BENCH_TINY=1 shrinks every size to a few MB (trying the script).
set -uo pipefail

usage() {
    cat <<'EOF'
usage: scripts/bench.sh [--quick] [--only NAME] [--keep] [--growth] [--help]
Runs the benchmarks and prints one table: what, memscope's figure, the peer
(CPython) and its figure measured in the same run, the target, met or not.
  --quick      smaller sizes (snapshots of 30 and 100 MB, 1 M events, ...)
  --only NAME  one benchmark: snapshot kineto native gui hostile ranks trainer
               whatif whatif-scripts advisor-loop inference roles ops allocator
               shapes (every speed figure on three snapshot shapes at 1 GB and
               3 GB, min-median-max of 3 alternating runs, and a 10 GB import)
  --keep       keep the generated data (printed at the end)
  --growth     also snapshot import, timeline build, layout index and frame
               time at three sizes (30 MB, 300 MB, 1 GB; steady and churn) and
               whether each grows linearly with the size
  --help       this text
Environment: MEMSCOPE_BIN (default build/bin), MEMSCOPE_BENCH_DIR (data
folder, default a fresh temporary one), PYTHON (default python3),
MEMSCOPE_BENCH_TINY=1 (every size a few MB; for trying the script).
Full sizes: snapshots of 303 MB (steady) and 1 GB (steady, churn), a kineto
trace of 100 MB, native 10 M events, bench-gui on a generated 10 M-event trace
and on the 1 GB snapshots. That takes many minutes and several GB of memory.
EOF
}

quick=0 only="" keep=0 growth=0
while (($#)); do
    case "$1" in
        --quick) quick=1 ;;
        --only)
            [[ $# -ge 2 ]] || { echo "bench.sh: --only needs a value" >&2; usage >&2; exit 2; }
            only=$2
            shift
            case "$only" in
                snapshot | kineto | native | gui | hostile | ranks | trainer | whatif | whatif-scripts | advisor-loop | inference | \
                    roles | ops | allocator | shapes) ;;
                *) echo "bench.sh: --only: unknown benchmark '$only'" >&2; usage >&2; exit 2 ;;
            esac
            ;;
        --keep) keep=1 ;;
        --growth) growth=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "bench.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${MEMSCOPE_BIN:-$root/build/bin}
python=${PYTHON:-python3}
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
if [[ ! -x $bin/memscope-gen-snapshot ]]; then
    echo "bench.sh: no benchmarks in $bin (run scripts/build.sh, or set MEMSCOPE_BIN)" >&2
    exit 1
fi
if [[ -n ${MEMSCOPE_BENCH_DIR:-} ]]; then
    work=$MEMSCOPE_BENCH_DIR
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/memscope-bench.XXXXXX")
fi
cleanup() {
    if ((keep)); then
        echo "data kept in $work"
    else
        rm -rf "$work/snapshots" "$work/logs" "$work/native.memscope" "$work/ranks" \
            "$work/whatif" "$work/hostile-corpus" "$work/shapes"
        rmdir "$work" 2>/dev/null || true
    fi
}
trap cleanup EXIT
mkdir -p "$work/snapshots" "$work/logs"

# Sizes: full, --quick, MEMSCOPE_BENCH_TINY=1.
if [[ ${MEMSCOPE_BENCH_TINY:-0} == 1 ]]; then
    mid_mb=8 big_mb=12 kineto_mb=2 native_events=100000 gui_events=100000
    growth_sizes="6 12 24" quick=1
elif ((quick)); then
    mid_mb=30 big_mb=100 kineto_mb=20 native_events=1000000 gui_events=1000000
    growth_sizes="10 30 100"
else
    mid_mb=303 big_mb=1024 kineto_mb=100 native_events=10000000 gui_events=10000000
    growth_sizes="30 300 1024"
fi

want() { [[ -z $only || $only == "$1" ]]; }
rows=()
row() { rows+=("$1|$2|$3|$4|$5|$6"); }
failed=()

# run NAME CMD...: runs, shows and logs the output to logs/NAME.log. With
# target_exit=1, exit 1 means a target was missed (the table says it), not a failure.
run() {
    local name=$1
    shift
    echo
    echo "== $name: $*"
    "$@" 2>&1 | tee "$work/logs/$name.log"
    local rc=${PIPESTATUS[0]}
    if ((rc == 1 && ${target_exit:-0})); then
        echo "bench.sh: $name exited 1: a target not met (see the table)"
    elif ((rc != 0)); then
        echo "bench.sh: $name exited $rc"
        failed+=("$name (exit $rc)")
    fi
    return "$rc"
}
log() { cat "$work/logs/$1.log" 2>/dev/null; }
# first MATCH of an extended regex with one group (perl), "" when absent.
grab() { log "$1" | perl -ne "if (/$2/) { print \$1; exit }"; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 <= b + 0) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 >= b + 0) }'; }
met() { if [[ -z $2 ]]; then echo "-"; elif "$1" "$2" "$3"; then echo yes; else echo NO; fi; }
both() { if [[ $1 == yes && $2 == yes ]]; then echo yes; elif [[ $1 == - || $2 == - ]]; then echo "-"; else echo NO; fi; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
or_dash() { if [[ -n $1 ]]; then echo "$1"; else echo "-"; fi; }

# gen SHAPE MB: a generated snapshot (cached in the data folder); prints its path.
gen() {
    local f="$work/snapshots/$1-$2mb.pickle"
    if [[ ! -s $f ]]; then
        "$bin/memscope-gen-snapshot" "$f" --mb "$2" --shape "$1" >"$work/logs/gen-$1-$2.log" 2>&1 ||
            { echo "bench.sh: memscope-gen-snapshot $1 $2 MB failed" >&2; cat "$work/logs/gen-$1-$2.log" >&2; }
        sed 's/^/  /' "$work/logs/gen-$1-$2.log" >&2
        # A fresh file's dirty pages would be written back during the timed
        # runs that follow it: flush them first.
        sync "$f" 2>/dev/null || sync
    fi
    echo "$f"
}

# snapshot_rows NAME: "secs|MB/s|RSS/file|peer secs|peer MiB/s|speed-up" from a bench-snapshot log.
snapshot_rows() {
    local n=$1
    local mibs secs rss peer_s peer_mibs speedup mbs
    secs=$(grab "$n" 'memscope import +([0-9.]+) s wall')
    mibs=$(grab "$n" 'memscope import .*? ([0-9.]+) MiB\/s wall')
    rss=$(grab "$n" 'peak RSS [0-9.]+ MiB \(([0-9.]+)x the file\)')
    peer_s=$(grab "$n" 'CPython \S+ +([0-9.]+) s wall')
    peer_mibs=$(grab "$n" 'CPython \S+ +.*? ([0-9.]+) MiB\/s wall')
    speedup=$(grab "$n" 'speed-up +([0-9.]+)x wall')
    mbs=$([[ -n $mibs ]] && calc "%.0f" "$mibs * 1.048576")
    echo "$secs|$mbs|$rss|$peer_s|$peer_mibs|$speedup"
}

# gui_rows NAME LABEL: frame times, first paint, open time from a bench-gui log.
gui_rows() {
    local n=$1 what=$2 fp
    fp=$(grab "$n" 'first paint after load: ([0-9.]+) ms')
    row "$what: first paint after load" "$(or_dash "${fp:+$fp ms}")" "-" "-" "<= 100 ms" "$(met le "$fp" 100)"
    local script mode line median worst
    for script in "mixed" "zoomed out" "zoomed in"; do
        for mode in category allocation; do
            line=$(log "$n" | perl -ne "if (/^  $script +$mode +([0-9.]+) +([0-9.]+)/) { print \"\$1 \$2\"; exit }")
            median=${line% *} worst=${line#* }
            if [[ -z $line ]]; then median="" worst=""; fi
            row "$what: frame, $script, by $mode" \
                "$(or_dash "${line:+median $median / worst $worst ms}")" "-" "-" "<= 16 ms" \
                "$(both "$(met le "$median" 16)" "$(met le "$worst" 16)")"
        done
    done
}

# --- snapshot import: 303 MB steady against pickle.load; 1 GB import RSS ---
if want snapshot; then
    f=$(gen steady "$mid_mb")
    if run snapshot-steady-$mid_mb "$bin/memscope-bench-snapshot" "$f" --python "$python"; then
        IFS='|' read -r secs mbs rss peer_s peer_mibs speedup <<<"$(snapshot_rows snapshot-steady-$mid_mb)"
        row "snapshot import $mid_mb MB (steady): speed-up" "$(or_dash "${secs:+$secs s}")" "pickle.load" \
            "$(or_dash "${peer_s:+$peer_s s}")" ">= 6x pickle.load" \
            "$(met ge "$speedup" 6 | sed "s/^/${speedup:+${speedup}x: }/")"
        row "snapshot import $mid_mb MB (steady): throughput" "$(or_dash "${mbs:+$mbs MB/s}")" "pickle.load" \
            "$(or_dash "${peer_mibs:+$(calc "%.0f" "$peer_mibs * 1.048576") MB/s}")" ">= 450 MB/s" "$(met ge "$mbs" 450)"
    fi
    for shape in steady churn; do
        f=$(gen "$shape" "$big_mb")
        if run snapshot-$shape-$big_mb "$bin/memscope-bench-snapshot" "$f" --no-python; then
            IFS='|' read -r secs mbs rss _ _ _ <<<"$(snapshot_rows snapshot-$shape-$big_mb)"
            row "snapshot import $big_mb MB ($shape): peak RSS / file" "$(or_dash "${rss:+${rss}x ($secs s)}")" \
                "-" "-" "<= 0.6x" "$(met le "$rss" 0.6)"
        fi
    done
fi

# --- kineto import: a synthetic 100 MB trace against json.load ---
if want kineto; then
    k="$work/snapshots/kineto-${kineto_mb}mb.json"
    [[ -s $k ]] || "$python" "$root/tests/bench/snapshot/gen_kineto.py" "$k" --mb "$kineto_mb"
    if run kineto-$kineto_mb "$bin/memscope-bench-snapshot" "$k" --python "$python"; then
        IFS='|' read -r secs mbs rss peer_s peer_mibs speedup <<<"$(snapshot_rows kineto-$kineto_mb)"
        row "kineto import $kineto_mb MB" "$(or_dash "${secs:+$secs s, $mbs MB/s}")" "json.load" \
            "$(or_dash "${peer_s:+$peer_s s}")" "- (${speedup:-?}x json.load)" "-"
    fi
fi

# --- native format: 10 M events ---
if want native; then
    if run native "$bin/memscope-bench-native" --events "$native_events" --file "$work/native.memscope"; then
        rate=$(grab native '^read: +[0-9.]+ s, ([0-9.]+) M events\/s')
        bpe=$(grab native '^bytes per event: +([0-9.]+)')
        row "native read, $native_events events" "$(or_dash "${rate:+$rate M events/s}")" "-" "-" \
            ">= 60 M events/s" "$(met ge "$rate" 60)"
        row "native size, $native_events events" "$(or_dash "${bpe:+$bpe B/event}")" "-" "-" "<= 8 B/event" \
            "$(met le "$bpe" 8)"
    fi
fi

# --- GUI: the generated trace, then the big snapshots ---
if want gui && [[ -x $bin/memscope-bench-gui ]]; then
    if run gui-generated "$bin/memscope-bench-gui" --events "$gui_events"; then
        gui_rows gui-generated "gui, $gui_events generated events"
    fi
    for shape in steady churn; do
        f=$(gen "$shape" "$big_mb")
        # Three opens, their median: the VM's speed drifts within a minute.
        if run gui-$shape-$big_mb "$bin/memscope-bench-gui" --file "$f" --opens 3; then
            open=$(grab gui-$shape-$big_mb 'timeline built in ([0-9.]+) s')
            row "snapshot open $big_mb MB ($shape), median of 3: load + timeline" "$(or_dash "${open:+$open s}")" "-" "-" \
                "<= 2.5 s" "$(met le "$open" 2.5)"
            gui_rows gui-$shape-$big_mb "gui, $big_mb MB $shape snapshot"
        fi
    done
elif want gui; then
    row "gui" "not built" "-" "-" "-" "-"
fi

# --- the rest: their own figures, at their default sizes (smallest with --quick) ---
if want hostile && [[ -x $bin/memscope-bench-hostile ]]; then
    args=("$work/hostile-corpus")
    ((quick)) && args+=(--small)
    run hostile "$bin/memscope-bench-hostile" "${args[@]}"
    bad=$(log hostile | grep -cE '^\|.*\| (CRASH|TIMEOUT)')
    cases=$(log hostile | grep -cE '^\| [^-c]')
    row "hostile corpus: crashes + timeouts" "$bad of $cases cases" "-" "-" "0" "$(met le "$bad" 0)"
fi
if want ranks && [[ -x $bin/memscope-bench-ranks ]]; then
    args=(--dir "$work/ranks")
    ((quick)) && args+=(--ranks 2,8 --mb 8 --distinct 2 --digests 16)
    target_exit=1 run ranks "$bin/memscope-bench-ranks" "${args[@]}"
    # "ranks N input_MB wall_s s/rank rss_MiB rss/input" lines; the target is for 64 x 50 MB.
    line=$(log ranks | perl -ne 'if (/^ranks +64 +[0-9.]+ +([0-9.]+) +[0-9.]+ +([0-9.]+)/) { print "$1 $2"; exit }')
    if [[ -n $line ]]; then
        row "64 ranks x 50 MB: wall / peak RSS" "${line% *} s / ${line#* } MiB" "-" "-" "<= 15 s, <= 1024 MiB" \
            "$(both "$(met le "${line% *}" 15)" "$(met le "${line#* }" 1024)")"
    else
        line=$(log ranks | perl -ne 'if (/^ranks +(\d+) +([0-9.]+) +([0-9.]+) +[0-9.]+ +([0-9.]+)/ && !$d) { $l = "$1 ranks, $2 MB: $3 s, $4 MiB" } $d = 1 if /^digest/; END { print $l }')
        row "ranks (no 64 x 50 MB run)" "$(or_dash "$line")" "-" "-" "64 x 50 MB: <= 15 s, <= 1024 MiB" "-"
    fi
fi
if want trainer && [[ -x $bin/memscope-bench-trainer ]]; then
    args=()
    ((quick)) && args+=(--small --theory-only)
    run trainer "$bin/memscope-bench-trainer" "${args[@]}"
    ns=$(grab trainer 'recording adds +([0-9.]+) ns')
    if ((quick)); then
        row "trainer (--small --theory-only)" "$(log trainer | grep -c '^== ') parts ran" "-" "-" "-" "-"
    else
        row "trainer: recording adds per event" "$(or_dash "${ns:+$ns ns}")" "-" "-" "-" "-"
    fi
fi
if want whatif && [[ -x $bin/memscope-bench-whatif ]]; then
    args=(--dir "$work/whatif")
    ((quick)) && args+=(--small)
    run whatif "$bin/memscope-bench-whatif" "${args[@]}"
    x=$(grab whatif '\(([0-9.]+) x the open\)')
    row "what-if: predict every policy / open" "$(or_dash "${x:+${x}x}")" "-" "-" "-" "-"
fi
if want allocator && [[ -x $bin/memscope-bench-allocator ]]; then
    # The caching-allocator model's replay of the big snapshots, against their open.
    for shape in steady churn; do
        f=$(gen "$shape" "$big_mb")
        run allocator-$shape "$bin/memscope-bench-allocator" "$f" --runs 3
        x=$(grab allocator-$shape 'replay \/ open +([0-9.]+)x')
        row "allocator model: replay / open, $big_mb MB ($shape)" "$(or_dash "${x:+${x}x}")" "-" "-" \
            "<= 1x" "$(met le "$x" 1)"
    done
fi
if want shapes && [[ -x $bin/memscope-bench-gui ]]; then
    # Import, open, frames and native read on steady, churn and segmented, in
    # alternating rounds; its own table (min-median-max), in the log.
    shape_args=(--sizes 1024,3072 --huge-mb 10240 --peer)
    ((quick)) && shape_args=(--sizes 100,300 --huge-mb 1024)
    [[ ${MEMSCOPE_BENCH_TINY:-0} == 1 ]] && shape_args=(--sizes 8,12 --huge-mb 20 --runs 2)
    mkdir -p "$work/shapes"
    if run shapes "$python" "$root/tests/bench/shapes/bench_shapes.py" --bin "$bin" --work "$work/shapes" \
        "${shape_args[@]}"; then
        n=$(log shapes | grep -c '| NO |')
        row "shapes: figures of the three shapes missing their target (table in logs/shapes.log)" \
            "$n" "-" "-" "0" "$( ((n == 0)) && echo yes || echo NO)"
    fi
fi
if want inference && [[ -x $bin/memscope-bench-inference ]]; then
    target_exit=1 run inference "$bin/memscope-bench-inference"
    t=$(grab inference 'every step found: (met|NOT met)')
    row "inference: mix, parameter and state bytes, steps" "$(or_dash "$t")" "-" "-" \
        ">= 90 %, within 5 %, all" "$([[ $t == met ]] && echo yes || { [[ -n $t ]] && echo NO || echo -; })"
fi
if want whatif-scripts && [[ -x $bin/memscope-cli ]]; then
    # whatif from one recorded full-save run against the same plain scripts
    # recorded with each policy applied by hand (needs a python3 with torch).
    args=(--cli "$bin/memscope-cli" --shapes full,small)
    ((quick)) && args=(--cli "$bin/memscope-cli" --shapes full)
    target_exit=1 run whatif-scripts "$python" "$root/tests/bench/whatif/bench_whatif_scripts.py" \
        "${args[@]}"
    n=$(log whatif-scripts | grep -E '^(transformer|cnn) ' | grep -vc 'predicted from')
    off=$(log whatif-scripts | grep -cE -- '<-- off|refused')
    row "whatif on plain scripts: predictions off by > 5 %" "$(or_dash "${off:-}")" "-" "-" \
        "0 of ${n:-?}" "$([[ ${off:-x} == 0 ]] && echo yes || echo NO)"
fi
if want advisor-loop && [[ -x $bin/memscope-cli ]]; then
    # The advisor's answers at three budgets per plain script, applied by
    # record --apply and measured (needs a python3 with torch).
    target_exit=1 run advisor-loop "$python" "$root/tests/bench/whatif/bench_advisor_loop.py" \
        --cli "$bin/memscope-cli"
    n=$(log advisor-loop | grep -cE '^(transformer|cnn|tower|tower-wide) ')
    off=$(log advisor-loop | grep -cE -- '<-- off|NOT APPLIED')
    row "advisor: answers off by > 5 %, over budget or not applied" "$(or_dash "${off:-}")" "-" \
        "-" "0 of ${n:-?}" "$([[ ${off:-x} == 0 ]] && echo yes || echo NO)"
fi
if want roles && [[ -x $bin/memscope-cli ]]; then
    # record's tensor roles on against off, alternating runs of a CPU
    # transformer (needs a python3 with torch; it says so otherwise).
    args=(--cli "$bin/memscope-cli")
    ((quick)) && args+=(--pairs 2 --steps 10)
    run roles "$python" "$root/tests/bench/record/bench_record_roles.py" "${args[@]}"
    o=$(grab roles 'overhead: ([-+0-9.]+ %)')
    row "record: tensor roles on / off, step time" "$(or_dash "$o")" "-" "-" "-" "-"
fi
if want ops && [[ -x $bin/memscope-cli ]]; then
    # record --ops: no memscope, off, auto and dispatch in rotating rounds of
    # a CPU transformer (needs a python3 with torch; it says so otherwise).
    args=(--cli "$bin/memscope-cli")
    ((quick)) && args+=(--rounds 3 --steps 10)
    run ops "$python" "$root/tests/bench/record/bench_record_ops.py" "${args[@]}"
    o=$(grab ops 'auto / off: ([-+0-9.]+ %)')
    row "record: --ops auto / off, step time" "$(or_dash "$o")" "-" "-" "<= +3 %" \
        "$(o=${o% %}; [[ -n $o ]] && awk -v o="$o" 'BEGIN{print (o <= 3) ? "yes" : "NO"}' || echo -)"
    d=$(grab ops 'dispatch / off: ([-+0-9.]+ %)')
    row "record: --ops dispatch / off, step time" "$(or_dash "$d")" "-" "-" "-" "-"
fi

# --- growth: cost against size ---
growth_table=()
if ((growth)); then
    for shape in steady churn; do
        prev_mb="" prev=()
        for mb in $growth_sizes; do
            f=$(gen "$shape" "$mb")
            run growth-snap-$shape-$mb "$bin/memscope-bench-snapshot" "$f" --no-python >/dev/null
            imp=$(grab growth-snap-$shape-$mb 'memscope import +([0-9.]+) s wall')
            tl="" li="" ft=""
            if [[ -x $bin/memscope-bench-gui ]]; then
                run growth-gui-$shape-$mb "$bin/memscope-bench-gui" --file "$f" >/dev/null
                open=$(grab growth-gui-$shape-$mb 'timeline built in ([0-9.]+) s')
                [[ -n $open && -n $imp ]] && tl=$(calc "%.3f" "$open - $imp < 0 ? 0 : $open - $imp")
                li=$(grab growth-gui-$shape-$mb 'layout index built in ([0-9.]+) s')
                ft=$(log growth-gui-$shape-$mb |
                    perl -ne 'if (/^  (mixed|zoomed out|zoomed in) +(category|allocation) +([0-9.]+)/) { $m = $3 if $3 > $m } END { print $m if defined $m }')
            fi
            cur=("$imp" "$tl" "$li" "$ft")
            verdicts=()
            for i in 0 1 2 3; do
                v="-"
                if [[ -n $prev_mb && -n ${prev[$i]:-} && -n ${cur[$i]} ]]; then
                    v=$(awk -v a="${prev[$i]}" -v b="${cur[$i]}" -v s="$prev_mb" -v t="$mb" 'BEGIN {
                        if (a <= 0) { print "-"; exit }
                        r = (b / a) / (t / s)
                        if (r > 1.5) v = "superlinear"; else if (r < 1 / 1.5) v = "sublinear"; else v = "linear"
                        printf "%s (%.2fx for %.2fx)", v, b / a, t / s }')
                fi
                verdicts+=("$v")
            done
            growth_table+=("$shape|$mb MB|$(or_dash "$imp")|${verdicts[0]}|$(or_dash "$tl")|${verdicts[1]}|$(or_dash "$li")|${verdicts[2]}|$(or_dash "$ft")|${verdicts[3]}")
            prev_mb=$mb prev=("${cur[@]}")
        done
    done
fi

echo
echo "== results"
echo "| what | memscope | peer | peer figure | target | met? |"
echo "|---|---|---|---|---|---|"
for r in "${rows[@]}"; do
    IFS='|' read -r a b c d e f <<<"$r"
    echo "| $a | $b | $c | $d | $e | $f |"
done
if ((growth)); then
    echo
    echo "== growth (s; frame: the worst median of the six rows, ms; 'linear': the cost ratio"
    echo "   within 1.5x of the size ratio; timeline = bench-gui's open - bench-snapshot's import)"
    echo "| shape | size | import | growth | timeline | growth | layout index | growth | frame | growth |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for r in "${growth_table[@]}"; do
        echo "| ${r//|/ | } |"
    done
fi
if ((${#failed[@]})); then
    echo
    echo "failed: ${failed[*]}"
    exit 1
fi
