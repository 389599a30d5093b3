#!/bin/bash
# seed.sh — the second seed's scenario ("perf bpf: Probing with local variable") in real guest
# kernels: tests/bpf/seed_write.o, whose program gets file->f_mapping->a_ops, bytes and offset of
# generic_perform_write() from a DWARF-built prologue, recorded in an x86_64 and an arm64 guest.
#
# The guests have no debug info (an appliance keeps its kernel's vmlinux on the build host), so per
# arch, on this x86_64 host, with the DWARF vmlinux of the guest's kernel (fetch-kernels.sh --dbg):
#   1. `sluice prologue --arch A --debuginfo VMLINUX --lines 'generic_perform_write VARS'` lists the
#      lines of the function and where the three variables can be fetched; the first such line is
#      taken (derived here, for whatever kernel build the cache holds);
#   2. `sluice prologue ... --emit SPEC 'generic_perform_write=generic_perform_write:LINE VARS'`
#      prints the prologue and fetch-args and writes the resolved spec (probe at FUNC+OFF, the
#      variables as kprobe fetch-args), which needs no debug info where it is recorded;
#   3. `perf probe -k VMLINUX -D` of the same spec must give the same place and the same fetch-arg
#      strings (perf's own DWARF resolution: the reference);
#   4. kernel globals: `kernel_clone max_threads nr_threads $err` emitted the same way (the globals
#      spelled from _stext, `@_stext+OFF`), its fetch-args and place compared with perf's;
#   5. one guest boots with sluice, the object, the spec files and runtime/tests/guest_seed.rs, which
#      runs `sluice record --event f="$(cat SPEC)"` on a workload of known writes and checks every
#      sample, then records the globals' spec around three forks (see that file); shmem_aops's and
#      _stext's addresses come from the vmlinux's symbols. The guests boot with KASLR
#      (GUEST_KASLR=1): the arm64 kernel is moved (SLUICE_SEED_KASLR=1 makes the test insist), the
#      amd64 one is not (its PVH entry skips x86's KASLR).
#
# Usage: aarch64-ci/guest/seed.sh [ARCH...]     default: amd64 arm64
#        (first: aarch64-ci/guest/fetch-kernels.sh --dbg; perf from linux-perf)
# env:   GUEST_SMP (1), CROSS_OPT_LEVEL (1, as record.sh: the same musl artifacts), GUEST_LOG_DIR,
#        GUEST_TIMEOUT (see run.sh), SLUICE_CACHE (see fetch-kernels.sh)
# Prints each step's output, then a summary: per arch the line, the two fetch-arg strings, the
# sample lines, the test's figures and the times. Exits non-zero if anything differs or fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
arches=("$@"); [ ${#arches[@]} -gt 0 ] || arches=(amd64 arm64)
export CARGO_PROFILE_DEV_OPT_LEVEL=${CROSS_OPT_LEVEL:-1}
tdir=${CARGO_TARGET_DIR:-$PWD/target}
cache=${SLUICE_CACHE:-$HOME/.cache/sluice}/guest
w=$(mktemp -d "${TMPDIR:-/tmp}/guest-seed.XXXXXX"); trap 'rm -rf "$w"' EXIT
func=generic_perform_write
vars='file->f_mapping->a_ops bytes offset'
command -v perf >/dev/null || { echo "guest-seed: perf is needed for the reference (Debian: linux-perf)" >&2; exit 2; }
secs() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}'; }

# The host's sluice: the static x86_64 build, the same one the x86_64 guest runs.
b0=$(date +%s.%N)
if ! cargo build -q --locked -p sluice --target x86_64-unknown-linux-musl; then
  echo "guest-seed: building sluice for x86_64-unknown-linux-musl failed" >&2; exit 1
fi
host=$tdir/x86_64-unknown-linux-musl/debug/sluice
echo "guest-seed: host sluice built in $(secs "$b0") s"

rc=0; report=()
for arch in "${arches[@]}"; do
  case $arch in amd64|x86_64) arch=amd64; t=x86_64-unknown-linux-musl; a=x86_64 ;;
    arm64|aarch64) arch=arm64; t=aarch64-unknown-linux-musl; a=aarch64 ;;
    *) echo "guest-seed: unknown arch $arch" >&2; exit 2 ;; esac
  fail() { echo "guest-seed: $arch: $*" >&2; rc=1; report+=("--- $arch: FAILED: $*"); }
  vmlinux=$cache/$arch/current/vmlinux
  [ -s "$vmlinux" ] || { fail "no $vmlinux (run aarch64-ci/guest/fetch-kernels.sh --dbg $arch)"; continue; }
  mkdir -p "$w/$arch"

  # 1. where the variables live: the first line of the function where all three resolve
  t0=$(date +%s.%N)
  if ! "$host" prologue --arch "$a" --debuginfo "$vmlinux" --lines "$func $vars" > "$w/$arch/lines"; then
    fail "sluice prologue --lines failed"; continue
  fi
  lines_s=$(secs "$t0")
  line=$(awk -F'\t' '$2 != "-" { n = $1; sub(/.*:/, "", n); print n; exit }' "$w/$arch/lines")
  [ -n "$line" ] || { cat "$w/$arch/lines"; fail "no line of $func where $vars can all be fetched"; continue; }
  echo "=== guest-seed $arch: lines of $func with code: $(wc -l < "$w/$arch/lines"), all of '$vars' at:"
  awk -F'\t' '$2 != "-"' "$w/$arch/lines"

  # 2. the prologue, fetch-args and resolved spec at that line
  spec="$func=$func:$line $vars"
  t0=$(date +%s.%N)
  if ! "$host" prologue --arch "$a" --debuginfo "$vmlinux" --emit "$w/$arch/seed.spec" "$spec" > "$w/$arch/prologue"; then
    fail "sluice prologue '$spec' failed"; continue
  fi
  emit_s=$(secs "$t0")
  echo "=== guest-seed $arch: sluice prologue --arch $a --debuginfo VMLINUX --emit seed.spec '$spec'"
  cat "$w/$arch/prologue"
  [ "$(grep -c '^site ' "$w/$arch/prologue")" -eq 1 ] || { fail "expected one site"; continue; }
  ours_args=$(sed -n 's/^fetch-args: //p' "$w/$arch/prologue")
  ours_place=$(sed -n 's/^tracefs: p \([^ ]*\) .*/\1/p' "$w/$arch/prologue")

  # 3. perf's resolution of the same spec
  t0=$(date +%s.%N)
  perf_line=$(perf probe -k "$vmlinux" -D "$func:$line $vars" 2>"$w/$arch/perf.err" | grep '^p:')
  perf_s=$(secs "$t0")
  [ -n "$perf_line" ] || { cat "$w/$arch/perf.err" >&2; fail "perf probe -D gave nothing"; continue; }
  perf_place=$(echo "$perf_line" | awk '{print $2}')
  perf_args=$(echo "$perf_line" | cut -d' ' -f3-)
  echo "=== guest-seed $arch: perf probe -k VMLINUX -D '$func:$line $vars'"
  echo "$perf_line"
  same=yes
  [ "$ours_place" = "$perf_place" ] || { same=no; fail "place: sluice $ours_place, perf $perf_place"; }
  [ "$ours_args" = "$perf_args" ] || { same=no; fail "fetch-args: sluice '$ours_args', perf '$perf_args'"; }
  [ $same = yes ] || continue

  # 4. kernel globals: read where the running (KASLR) kernel has them
  gvars='max_threads nr_threads'
  if ! "$host" prologue --arch "$a" --debuginfo "$vmlinux" --emit "$w/$arch/global.spec" "clone=kernel_clone $gvars \$err" > "$w/$arch/global.prologue"; then
    fail "sluice prologue 'kernel_clone $gvars' failed"; continue
  fi
  echo "=== guest-seed $arch: sluice prologue --arch $a --debuginfo VMLINUX --emit global.spec 'clone=kernel_clone $gvars \$err'"
  grep -v '^(' "$w/$arch/global.prologue"
  g_ours_args=$(sed -n 's/^fetch-args: //p' "$w/$arch/global.prologue")
  g_ours_place=$(sed -n 's/^tracefs: p \([^ ]*\) .*/\1/p' "$w/$arch/global.prologue")
  g_perf=$(perf probe -k "$vmlinux" -D "kernel_clone $gvars" 2>"$w/$arch/perf.err" | grep '^p:')
  echo "$g_perf"
  [ "$g_ours_place $g_ours_args" = "$(echo "$g_perf" | cut -d' ' -f2-)" ] ||
    { fail "globals: sluice '$g_ours_place $g_ours_args', perf '$g_perf'"; continue; }

  # 5. the guest: sluice, the object, the resolved spec; shmem_aops for the a_ops check
  a_ops=$(readelf -sW "$vmlinux" | awk '$8 == "shmem_aops" { print $2; exit }')
  stext=$(readelf -sW "$vmlinux" | awk '$8 == "_stext" { print $2; exit }')
  kaslr=0; [ "$arch" = arm64 ] && kaslr=1
  b0=$(date +%s.%N)
  if ! cargo build -q --locked -p sluice --target "$t"; then fail "building sluice for $t"; continue; fi
  testbin=$(cargo test -q --locked -p sluice-runtime --test guest_seed --target "$t" --no-run \
              --message-format=json | sed -n 's/.*"executable":"\([^"]*guest_seed-[^"]*\)".*/\1/p' | tail -1)
  [ -n "$testbin" ] && [ -x "$testbin" ] || { fail "building the guest_seed test for $t"; continue; }
  build_s=$(secs "$b0")
  GUEST_SMP=${GUEST_SMP:-1} GUEST_KASLR=1 \
  GUEST_FILES="tests/bpf/seed_write.o $tdir/$t/debug/sluice $w/$arch/seed.spec $w/$arch/global.spec" \
  GUEST_ENV="SLUICE_FIXTURES=/files SLUICE_BIN=/files/sluice SLUICE_SEED_SPEC=/files/seed.spec SLUICE_SEED_GLOBAL_SPEC=/files/global.spec SLUICE_SEED_A_OPS=0x${a_ops:-0} SLUICE_SEED_STEXT=0x${stext:-0} SLUICE_SEED_KASLR=$kaslr SLUICE_REQUIRE_KERNEL=1 SLUICE_REQUIRE_KPROBES=1" \
    aarch64-ci/guest/run.sh "$arch" "$testbin" -- --test-threads=1 --nocapture 2>&1 | tee "$w/$arch/guest.log"
  r=${PIPESTATUS[0]}
  [ "$r" -eq 0 ] || { rc=1; }
  report+=("--- $arch ($(cat "$cache/$arch/current/kver")): exit $r; line $func:$line = $ours_place;" \
           "  resolution on the host: --lines ${lines_s} s, --emit ${emit_s} s; perf -D ${perf_s} s; guest build ${build_s} s" \
           "  sluice fetch-args:   $ours_args" \
           "  perf probe -D:       $perf_args  (equal: $same)" \
           "  resolved spec:       $(head -1 "$w/$arch/seed.spec")" \
           "  globals, sluice:     $g_ours_place $g_ours_args" \
           "  globals, perf -D:    $(echo "$g_perf" | cut -d' ' -f2-)" \
           "  globals, spec:       $(head -1 "$w/$arch/global.spec")")
  while IFS= read -r l; do report+=("  $l"); done < <(tr -d '\r' < "$w/$arch/guest.log" |
    grep -oE 'seed-sample .*|global-sample .*|guest-figures .*|^test result: .*|[^ ].*boot→poweroff' |
    sed 's/^guest-figures [a-z0-9_]*: //; s/^seed-sample [a-z0-9_]*: /sample: /; s/^global-sample [a-z0-9_]*: /global sample: /')
done
echo "=== guest-seed summary"
printf '%s\n' "${report[@]}"
exit $rc
