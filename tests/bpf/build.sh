#!/bin/sh
# Rebuild every BPF fixture object from its C source, byte for byte.
#
#   tests/bpf/build.sh            rebuild all *.o next to their *.c
#   CLANG=clang-14 tests/bpf/build.sh
#
# Deterministic: the same clang gives the same bytes on every run and in any
# checkout directory (we compile from inside this directory with relative
# names and -fdebug-compilation-dir=., so no path of the build machine ends
# up in DWARF or BTF). Nothing is stripped. No system header is used
# (-nostdinc): the fixtures only include sluice_bpf.h.
set -eu

cd "$(dirname "$0")"
CLANG=${CLANG:-clang}

# -target bpfel rather than bpf: "bpf" means the host's endianness.
COMMON="-O2 -g -target bpfel -nostdinc -fdebug-compilation-dir=. -Wall -Werror -Wno-unused-function"

# name:extra flags (insns needs ALU32/JMP32/atomic fetch: -mcpu=v3)
FIXTURES="
seed_write:
legacy_maps:
maps_flags:
maps_iproute2:
maps_36:
kprobes:
uprobes:
modern:
linking:
insns:-mcpu=v3
bad_verifier:
no_version:
btf_kinds:
btf_maps:
btf_core:
modern_kconfig:
modern_badline:
record_demo:
record_filter:
record_output:
record_magic:
guest_kprobes:
dwarf_chain:
dwarf_types:
dwarf_words:
bench_drain:
prog_config:
pinned:
sampling:
lost_count:
shared_tp:
many_args:
attach_types:
attach_refused:
attach_multi:
uprobe_multi:
attach_nofunc:
guest_attach:
bench_ringbuf:
ringbuf_records:
maps_read:
maps_bench:
"

for entry in $FIXTURES; do
	name=${entry%%:*}
	extra=${entry#*:}
	# shellcheck disable=SC2086
	"$CLANG" $COMMON $extra -c "$name.c" -o "$name.o"
	echo "built $name.o"
done

# usdt.c is built against libbpf's own usdt.bpf.h (libbpf-dev), so it takes the system
# headers (x86 pt_regs for bpf_tracing.h): the one fixture that is not -nostdinc.
# shellcheck disable=SC2086
"$CLANG" -O2 -g -target bpfel -mcpu=v3 -D__TARGET_ARCH_x86 -I/usr/include/x86_64-linux-gnu \
	-fdebug-compilation-dir=. -Wall -Werror -Wno-unused-function -c usdt.c -o usdt.o
echo "built usdt.o"

# The filters of cli/tests/perf_data.rs live beside their traced program, outside this
# folder: the open digest hashes every object here.
(cd ../record && "$CLANG" $COMMON -c perf_data_filter.c -o perf_data_filter.o &&
	"$CLANG" $COMMON -c who.c -o who.o &&
	"$CLANG" $COMMON -c printk.c -o printk.o)
echo "built ../record/perf_data_filter.o ../record/who.o ../record/printk.o"

# The one big-endian object: the open phase must reject it (endianness
# different from the target). Kept in its own folder so that globs over
# tests/bpf/*.o only see little-endian objects.
# shellcheck disable=SC2086
"$CLANG" -O2 -g -target bpfeb -nostdinc -fdebug-compilation-dir=. -Wall -Werror \
	-Wno-unused-function -c no_version.c -o big_endian/no_version_be.o
echo "built big_endian/no_version_be.o"
