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
