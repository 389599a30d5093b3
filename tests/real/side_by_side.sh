#!/usr/bin/env bash
# The real libbpf-tools event tools and `sluice record` of the same tools' objects, side by
# side: both attached at the same time, one workload of known counts (sbsmark.c, whose
# comm no other process has), both stopped with SIGINT; each counts the lines it printed
# for that comm (the real tool's by name; sluice's by the name in the sample's head or
# the comm in its payload, decoded or as hex; `record -a`: system-wide, as the real tools
# are). Prints a table:
#   tool | sluice's choices | workload | expected | real | sluice
#
#   tests/real/side_by_side.sh [TOOL...]     (root; env: N=50 SLUICE_REAL_OBJS=dir SLUICE=bin)
#
# javagc (where javac is) runs on a JVM of its own instead, both tools on its process.
#
# Needs Debian's libbpf-tools (the package tests/real/ pins) and the objects
# tests/real/fetch.sh extracts from it. sluice is built in release unless SLUICE names it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
N=${N:-50}
objs=${SLUICE_REAL_OBJS:?set SLUICE_REAL_OBJS (tests/real/fetch.sh DIR)}/libbpf-tools
[[ $(id -u) == 0 ]] || { echo "side_by_side.sh: needs root" >&2; exit 1; }
work=$(mktemp -d /tmp/sluice-side-by-side.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -static -O2 -Wall -o "$work/sbsmark" "$here/sbsmark.c"
if [[ -z ${SLUICE:-} ]]; then
	(cd "$repo" && cargo build -q --release --locked -p sluice)
	SLUICE=$repo/target/release/sluice
fi
# comm "sbsmark" as the payload's bytes print in hex.
hex=7362736d61726b

# tool | real tool's arguments | sluice's arguments | workload | expected (- : not known
# exactly: the kernel decides, e.g. how many state changes a socket goes through)
rows=(
	"execsnoop||--|exec|$((N + 1))"
	"exitsnoop||--|exit|$((N + 1))"
	"opensnoop||--|open|$N"
	"statsnoop||--|stat|$N"
	"sigsnoop||--prog sig_trace|signal|$((N + 1))"
	"sigsnoop|-k|--prog kill_entry,kill_exit|signal|$N"
	"mountsnoop||--|umount|$N"
	"tcplife||--|tcp|-"
	"tcpstates||--|tcp|-"
)
want=("$@")

stop() {  # pid: SIGINT, as Ctrl-C, then wait
	kill -INT "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

printf '| tool | sluice record | workload | expected | real | sluice |\n|---|---|---|---|---|---|\n'
for row in "${rows[@]}"; do
	IFS='|' read -r tool targs sargs mode expected <<<"$row"
	if [[ ${#want[@]} -gt 0 ]] && [[ ! " ${want[*]} " == *" $tool "* ]]; then
		continue
	fi
	[[ $sargs == -- ]] && sargs=
	obj=$objs/$tool.bpf.o
	# shellcheck disable=SC2086  # the rows' arguments are words
	stdbuf -oL "/usr/sbin/$tool" $targs >"$work/real.out" 2>"$work/real.err" &
	real=$!
	# shellcheck disable=SC2086
	"$SLUICE" record -a -e "$obj" $sargs >"$work/sluice.out" 2>"$work/sluice.err" &
	ours=$!
	# Both attached: the real tool prints its header then; sluice its first lines or
	# nothing, so give it the same time.
	for _ in $(seq 100); do
		[[ -s $work/real.out ]] && break
		sleep 0.1
	done
	sleep 1.5
	status=ok
	"$work/sbsmark" "$mode" "$N" || status="workload failed ($?)"
	sleep 1
	stop "$real"
	stop "$ours"
	r=$(grep -c sbsmark "$work/real.out" || true)
	s=$(grep -c -e sbsmark -e "$hex" "$work/sluice.out" || true)
	note=
	[[ $status == ok ]] || note=" ($status)"
	grep -q '^sluice record: ' "$work/sluice.err" || note="$note (sluice: $(tail -1 "$work/sluice.err"))"
	printf '| %s %s | %s | %s %s | %s | %s | %s%s |\n' "$tool" "$targs" "${sargs:-(all)}" \
		"$mode" "$N" "$expected" "$r" "$s" "$note"
done

# javagc: USDT probes of a JVM (hotspot's gc__begin/gc__end and mem__pool__gc__begin/end in
# libjvm.so), the real tool and sluice both on the process (-p). The real tool attaches
# handle_gc_start/handle_gc_end to both pairs and only prints collections longer than -t
# microseconds (1000 by default): -t 0 and --set time=0 count them all. GcN.java calls
# System.gc() N times under the serial collector: N collections, N events. Row printed only
# where javac is.
if command -v javac >/dev/null && { [[ ${#want[@]} -eq 0 ]] || [[ " ${want[*]} " == *" javagc "* ]]; }; then
	javac -d "$work" "$here/GcN.java"
	mkfifo "$work/jvm.in"
	exec 3<>"$work/jvm.in"
	java -XX:+UseSerialGC -cp "$work" GcN "$N" <&3 >"$work/jvm.out" 2>&1 &
	jvm=$!
	for _ in $(seq 100); do
		grep -q ready "$work/jvm.out" && break
		sleep 0.1
	done
	jvmso=$(awk '/libjvm\.so$/ { print $6; exit }' "/proc/$jvm/maps")
	stdbuf -oL /usr/sbin/javagc -p "$jvm" -t 0 >"$work/real.out" 2>"$work/real.err" &
	real=$!
	sargs="--prog handle_gc_start,handle_gc_end --set time=0"
	# shellcheck disable=SC2086
	"$SLUICE" record -p "$jvm" -e "$objs/javagc.bpf.o" $sargs \
		--event "handle_gc_start=usdt/$jvmso:hotspot:mem__pool__gc__begin" \
		--event "handle_gc_end=usdt/$jvmso:hotspot:mem__pool__gc__end" \
		--event "handle_gc_start=usdt/$jvmso:hotspot:gc__begin" \
		--event "handle_gc_end=usdt/$jvmso:hotspot:gc__end" \
		>"$work/sluice.out" 2>"$work/sluice.err" &
	ours=$!
	for _ in $(seq 100); do
		[[ -s $work/real.out ]] && break
		sleep 0.1
	done
	sleep 1.5
	echo go >&3
	for _ in $(seq 300); do
		grep -q done "$work/jvm.out" && break
		sleep 0.1
	done
	sleep 1
	stop "$real"
	echo end >&3
	wait "$jvm" || true
	stop "$ours"
	exec 3>&-
	# The real tool's lines of the JVM (its PID column); sluice's records of it (PID/TID).
	r=$(awk -v p="$jvm" '$3 == p' "$work/real.out" | wc -l)
	s=$(grep -c -e " $jvm/.*bpf-output:perf_map" "$work/sluice.out" || true)
	note=
	grep -q done "$work/jvm.out" || note=" (jvm: $(tail -1 "$work/jvm.out"))"
	grep -q '^sluice record: ' "$work/sluice.err" || note="$note (sluice: $(tail -1 "$work/sluice.err"))"
	printf '| javagc -t 0 | %s | gc %s | %s | %s | %s%s |\n' "$sargs" "$N" "$N" "$r" "$s" "$note"
fi
