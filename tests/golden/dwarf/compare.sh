#!/usr/bin/env bash
# Golden comparison of core::dwarf against `perf probe` (Debian's linux-perf), user-space mode.
#
#   compare.sh                      fixtures: tests/dwarf/vars.c built -O0/-O2, x86_64 and -m32
#   compare.sh BINARY SPECS_FILE    any binary (e.g. the SQLite driver of the peers' dwarf/run.sh
#                                   and its probes.txt)
#
# For every spec: `perf probe -x BIN -n -v SPEC` (its "Writing event:" lines) beside
# `dwarf_probe BIN SPEC` (runtime/examples/dwarf_probe.rs), both with the binary path replaced by
# BINARY and the event group by G. Prints one verdict per spec:
#   MATCH       same probe lines (address and every fetch-arg)
#   DIFF        both resolved, differently (both lines shown)
#   PERF-ONLY   perf resolved it, we did not (our reason shown)
#   OURS-ONLY   we resolved it, perf did not (perf's reason shown)
#   BOTH-FAIL   neither (both reasons)
# and, with TIME=1, wall time and peak RSS of each tool per spec (/usr/bin/time).
# Needs root for perf probe (it opens tracefs even with -n), gcc, and gcc-multilib for -m32.
# Exit status 0; the verdicts are the result (UPDATE=1 writes them to expected_*.txt here:
# expected_vars.txt, expected_BINARYNAME.txt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
TIME=${TIME:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v perf >/dev/null || { echo "perf is needed (apt-get install linux-perf)" >&2; exit 1; }
(cd "$root" && cargo build -q --release -p sluice-runtime --example dwarf_probe)
ours=$root/target/release/examples/dwarf_probe

norm() {  # path -> stdin normalized
    sed -E "s|$1|BINARY|g; s#^([pr]):[^/ ]+/#\1:G/#"
}

compare_one() {  # binary spec
    local bin=$1 spec=$2 p o
    perf probe -q -d 'probe_*:*' >/dev/null 2>&1 || true
    if [[ $TIME == 1 ]]; then
        /usr/bin/time -f '%e %M' -o "$work/pt" perf probe -x "$bin" -n -v "$spec" >"$work/perf.out" 2>&1 || true
        /usr/bin/time -f '%e %M' -o "$work/ot" "$ours" "$bin" "$spec" >"$work/ours.out" 2>&1 || true
    else
        perf probe -x "$bin" -n -v "$spec" >"$work/perf.out" 2>&1 || true
        "$ours" "$bin" "$spec" >"$work/ours.out" 2>&1 || true
    fi
    p=$(grep '^Writing event: ' "$work/perf.out" | sed 's/^Writing event: //' | norm "$bin" | sort || true)
    o=$(grep -E '^[pr]:' "$work/ours.out" | norm "$bin" | sort || true)
    local verdict
    if [[ -n $p && -n $o ]]; then
        [[ $p == "$o" ]] && verdict=MATCH || verdict=DIFF
    elif [[ -n $p ]]; then verdict=PERF-ONLY
    elif [[ -n $o ]]; then verdict=OURS-ONLY
    else verdict=BOTH-FAIL
    fi
    local t=""
    if [[ $TIME == 1 ]]; then
        t=" [perf $(tail -1 "$work/pt" | awk '{printf "%ss %dMB", $1, $2/1024}'), ours $(tail -1 "$work/ot" | awk '{printf "%ss %dMB", $1, $2/1024}')]"
    fi
    echo "$verdict  $spec$t"
    case $verdict in
        MATCH) ;;
        DIFF) diff <(echo "$p") <(echo "$o") | grep '^[<>]' | sed 's/^</    perf:/; s/^>/    ours:/' || true ;;
        PERF-ONLY) echo "$p" | sed 's/^/    perf: /'; grep '^#' "$work/ours.out" | sed 's/^# /    ours: /' || true ;;
        OURS-ONLY)
            echo "$o" | sed 's/^/    ours: /'
            grep -E 'Error|Failed|not found|Too many|not supported|is not|No such' "$work/perf.out" | grep -v 'open cache' | head -2 | norm "$bin" | sed 's/^ */    perf: /' || true ;;
        BOTH-FAIL)
            grep -E 'Error|Failed|not found|Too many|not supported|is not|No such' "$work/perf.out" | grep -v 'open cache' | head -2 | norm "$bin" | sed 's/^ */    perf: /' || true
            grep '^#' "$work/ours.out" | sed 's/^# /    ours: /' || true ;;
    esac
}

run_list() {  # binary specs-file label
    local bin=$1 file=$2 label=$3 spec
    echo "### $label"
    while IFS= read -r spec; do
        [[ -z $spec || $spec == \#* ]] && continue
        compare_one "$bin" "$spec"
    done <"$file"
}

summary() { grep -Eo '^(MATCH|DIFF|PERF-ONLY|OURS-ONLY|BOTH-FAIL)' "$1" | sort | uniq -c | tr '\n' ' '; echo; }

if (($# == 2)); then
    run_list "$(readlink -f "$1")" "$2" "$(basename "$1")" | tee "$work/report"
    echo "# summary: $(summary "$work/report")" | tee -a "$work/report"
    if [[ ${UPDATE:-0} == 1 ]]; then
        cp "$work/report" "$here/expected_$(basename "$1").txt"
    fi
    exit 0
fi

: >"$work/report"
for arch in 64 32; do
    for opt in O0 O2; do
        bin=$work/vars${arch}_$opt
        if ! gcc -m$arch -g -$opt -o "$bin" "$root/tests/dwarf/vars.c" 2>/dev/null; then
            echo "### vars${arch}_$opt: not built (gcc -m$arch unavailable)" | tee -a "$work/report"
            continue
        fi
        run_list "$bin" "$here/vars_specs.txt" "vars${arch}_$opt ($(gcc --version | head -1))" | tee -a "$work/report"
    done
done
echo "# summary: $(summary "$work/report")" | tee -a "$work/report"
if [[ ${UPDATE:-0} == 1 ]]; then
    cp "$work/report" "$here/expected_vars.txt"
fi
