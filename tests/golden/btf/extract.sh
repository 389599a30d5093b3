#!/bin/sh
# Goldens for sluice's BTF reader, from bpftool (the independent oracle).
#
#   tests/golden/btf/extract.sh --update [PEERS_DIR]
#
# Writes NAME.txt = `bpftool btf dump file tests/bpf/NAME.o` for every fixture
# with a .BTF section. With PEERS_DIR (a folder of other projects' *.bpf.o),
# also copies each peer object's .BTF and .BTF.ext sections into peers/NAME.btf
# and peers/NAME.btfext (the tests read these: the peers' objects themselves are
# not part of this repository) and writes peers/NAME.txt from bpftool.
set -eu

[ "${1:-}" = "--update" ] || { echo "usage: $0 --update [PEERS_DIR]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

has_btf() { LC_ALL=C readelf -S -W "$1" | grep -q ' \.BTF '; }

for o in "$here"/../../bpf/*.o "$here"/../../bpf/big_endian/*.o; do
	has_btf "$o" || continue
	name=$(basename "$o" .o)
	bpftool btf dump file "$o" > "$here/$name.txt"
	echo "wrote $name.txt"
done

if [ -n "${2:-}" ]; then
	for o in "$2"/*.bpf.o; do
		has_btf "$o" || continue
		name=$(basename "$o" .bpf.o)
		llvm-objcopy --dump-section ".BTF=$here/peers/$name.btf" "$o" "$tmp/out.o"
		if LC_ALL=C readelf -S -W "$o" | grep -q ' \.BTF\.ext '; then
			llvm-objcopy --dump-section ".BTF.ext=$here/peers/$name.btfext" "$o" "$tmp/out.o"
		fi
		bpftool btf dump file "$o" > "$here/peers/$name.txt"
		echo "wrote peers/$name.{btf,btfext,txt}"
	done
fi
