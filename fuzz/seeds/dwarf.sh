#!/bin/sh
# Rebuilds seeds/dwarf/ from tests/dwarf/*.c: gcc -g at -O0 and -O2, nothing stripped, small
# (no page-aligned separate code segment, no build-id), plus three copies with a probe spec
# after a newline at the tail (the `dwarf` target reads its extra spec from there).
# Built from inside tests/dwarf with relative names and a fixed compilation directory, so no
# path of the building machine ends up in the DWARF.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../tests/dwarf" && pwd)
out=$here/dwarf
mkdir -p "$out"
for f in vars chain; do
    for o in 0 2; do
        (cd "$src" && gcc -g -O$o -fdebug-prefix-map="$src"=. \
            -Wl,-z,noseparate-code -Wl,--build-id=none -o "$out/${f}_O$o" "$f.c")
    done
done
{ cat "$out/vars_O0"; printf '\nprocess:8 slot i offset'; } >"$out/vars_O0_tail_line"
{ cat "$out/vars_O2"; printf '\nsum_bytes%%return $retval'; } >"$out/vars_O2_tail_return"
{ cat "$out/chain_O2"; printf '\ngeneric_perform_write file->f_mapping->a_ops chunk'; } >"$out/chain_O2_tail_chain"
