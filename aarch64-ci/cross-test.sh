#!/bin/bash
# cross-test.sh — run the unit tests of sluice-core and sluice-runtime (`--lib`) for the foreign
# targets under user-mode QEMU:
#   aarch64       aarch64-unknown-linux-musl, runner qemu-aarch64-static
#   i686          i686-unknown-linux-musl, natively (the x86_64 kernel runs 32-bit binaries)
#   i686-qemu     i686-unknown-linux-musl, runner qemu-i386-static (same binaries as `i686`)
# qemu-user does not emulate bpf()/perf_event_open: the runtime's kernel tests skip there, so
# SLUICE_REQUIRE_KERNEL is unset for these runs (kernel tests belong in guest/run.sh).
#
# Usage: aarch64-ci/cross-test.sh [RUN...] [-- TEST-ARGS...]     default RUNs: aarch64 i686 i686-qemu
# env:   CROSS_PACKAGES  packages to test (default: "sluice-core sluice-runtime")
# Prints one line per run and a closing `cross-test: N passed, M failed` (tests summed over runs);
# exits non-zero if any build or test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do runs+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
[ ${#runs[@]} -gt 0 ] || runs=(aarch64 i686 i686-qemu)
pk=(); for p in ${CROSS_PACKAGES:-sluice-core sluice-runtime}; do pk+=(-p "$p"); done
unset SLUICE_REQUIRE_KERNEL
logdir=$(mktemp -d "${TMPDIR:-/tmp}/cross-test.XXXXXX"); trap 'rm -rf "$logdir"' EXIT

total_pass=0; total_fail=0; bad_runs=0; lines=()
for run in "${runs[@]}"; do
  case $run in
    aarch64)   target=aarch64-unknown-linux-musl; runner=qemu-aarch64-static ;;
    i686)      target=i686-unknown-linux-musl;    runner= ;;
    i686-qemu) target=i686-unknown-linux-musl;    runner=qemu-i386-static ;;
    *) echo "cross-test: unknown run '$run' (aarch64, i686, i686-qemu)" >&2; exit 2 ;;
  esac
  var=CARGO_TARGET_$(echo "$target" | tr a-z- A-Z_)_RUNNER
  log=$logdir/$run.log
  echo "=== cross-test $run: cargo test ${pk[*]} --lib --target $target (runner: ${runner:-native})"
  start=$(date +%s.%N)
  # native: no runner at all (cargo rejects an empty one); otherwise override .cargo/config.toml
  if [ -n "$runner" ]; then set_runner=("$var=$runner"); else set_runner=(-u "$var"); fi
  env "${set_runner[@]}" cargo test --locked "${pk[@]}" --lib --target "$target" -- "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
  # libtest: "test result: ok. 12 passed; 0 failed; 0 ignored; ..." once per test binary
  p=$(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1/p' "$log" | awk '{s+=$1} END{print s+0}')
  f=$(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\2/p' "$log" | awk '{s+=$1} END{print s+0}')
  bins=$(grep -c '^test result: ' "$log")
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  verdict=ok; if [ "$rc" -ne 0 ]; then verdict="FAILED (cargo exit $rc)"; bad_runs=$((bad_runs + 1)); fi
  lines+=("$(printf '  %-10s %-28s %-20s %4d passed, %d failed in %d test binaries, %ss: %s' \
    "$run" "$target" "${runner:-native}" "$p" "$f" "$bins" "$secs" "$verdict")")
done
echo "=== cross-test summary"
printf '%s\n' "${lines[@]}"
# a run that failed to build counts as one failure even though no test reported it
[ "$bad_runs" -gt 0 ] && [ "$total_fail" -eq 0 ] && total_fail=$bad_runs
echo "cross-test: $total_pass passed, $total_fail failed"
[ "$bad_runs" -eq 0 ]
