#!/usr/bin/env bash
# sluice-core open(+relocate) beside the peers (libbpf 1.1/1.4, aya-obj) on the peers' own
# objects: instructions per open under callgrind (the stable figure), heap allocations and
# syscalls per open. Rows: sluice-open+relocate (fresh storage, then every program
# relocated: the figure the goal is held to), sluice-reopen+relocate (storage reused),
# sluice-open (fresh storage, nothing relocated: what libbpf's open and aya's parse do).
#
#   core/benches/vs_peers.sh [PEERS_OBJOPEN_DIR]
#
# PEERS_OBJOPEN_DIR defaults to $SLUICE_PEERS/objopen, else ../shared/peers/objopen next to
# the repository. It is copied to a scratch directory (the original may be read-only) and its
# run.sh builds and measures the peers (apt + crates; takes minutes). SKIP_PEERS=1 measures
# sluice only.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
src=${1:-${SLUICE_PEERS:-$repo/../shared/peers}/objopen}
[ -d "$src" ] || { echo "no peers folder at $src" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/objopen"
objs="small maps legacy legacy_flags globals large"

if [ "${SKIP_PEERS:-0}" != 1 ]; then
	echo "[vs_peers] running the peers' run.sh (SKIP_LOAD=1)" >&2
	(cd "$work/objopen" && SKIP_LOAD=1 bash run.sh >"$work/peers.txt" 2>"$work/peers.log") || {
		echo "peers' run.sh failed; see its log:" >&2
		tail -20 "$work/peers.log" >&2
	}
fi

echo "[vs_peers] building sluice's objopen example" >&2
(cd "$repo" && cargo build --profile bench -p sluice-core --example objopen -q)
bin=$repo/target/release/examples/objopen
cg_iters() { case $1 in large) echo 3 ;; globals) echo 10 ;; *) echo 20 ;; esac; }

printf 'object\tsystem\tinstructions_per_open\tallocs_per_open\n'
for o in $objs; do
	f=$work/objopen/objs/$o.bpf.o
	[ -f "$f" ] || continue
	k=$(cg_iters "$o")
	for fn in measured_open measured_reopen measured_open_only; do
		valgrind --tool=callgrind --callgrind-out-file="$work/cg.$o.$fn" --collect-atstart=no \
			--toggle-collect=$fn "$bin" -c "$k" "$f" >/dev/null 2>&1
		tot=$(awk '/^(summary|totals):/{print $2; exit}' "$work/cg.$o.$fn")
		allocs=$("$bin" -a "$f" | cut -f2 | cut -d' ' -f1)
		# k measured calls plus one warm-up are inside the toggled function
		case $fn in
		measured_open) label=open+relocate ;;
		measured_reopen) label=reopen+relocate ;;
		*) label=open ;;
		esac
		printf '%s\tsluice-%s\t%d\t%s\n' "$o" "$label" $((tot / (k + 1))) "$allocs"
	done
	if [ -f "$work/objopen/build/results/instructions.tsv" ]; then
		awk -v o="$o" -F'\t' '$2 == o { printf "%s\t%s\t%s\t-\n", o, $1, $3 }' "$work/objopen/build/results/instructions.tsv"
	fi
done
if [ -f "$work/peers.txt" ]; then
	echo
	echo "# peers' own table (system object ns_per_open allocs_per_open instructions_per_open):"
	cat "$work/peers.txt"
fi
