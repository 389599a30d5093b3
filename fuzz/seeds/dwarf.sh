#!/bin/sh
# Rebuilds seeds/dwarf/ from tests/dwarf/*.c: gcc -g at -O0 and -O2, nothing stripped, small
# (no page-aligned separate code segment, no build-id), plus three copies with a probe spec
# after a newline at the tail (the `dwarf` target reads its extra spec from there).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../tests/dwarf
out=$here/dwarf
mkdir -p "$out"
for f in vars chain; do
    for o in 0 2; do
        gcc -g -O$o -Wl,-z,noseparate-code -Wl,--build-id=none -o "$out/${f}_O$o" "$src/$f.c"
    done
done
{ cat "$out/vars_O0"; printf '\nprocess:8 slot i offset'; } >"$out/vars_O0_tail_line"
{ cat "$out/vars_O2"; printf '\nsum_bytes%%return $retval'; } >"$out/vars_O2_tail_return"
{ cat "$out/chain_O2"; printf '\ngeneric_perform_write file->f_mapping->a_ops chunk'; } >"$out/chain_O2_tail_chain"
