#!/bin/bash
# cross-test.sh — run sluice-core's tests (unit and integration: pure logic, no kernel) and
# sluice-runtime's unit tests (`--lib`) for the foreign targets under user-mode QEMU:
#   aarch64       aarch64-unknown-linux-musl, runner qemu-aarch64-static
#   i686          i686-unknown-linux-musl, natively (the x86_64 kernel runs 32-bit binaries)
#   i686-qemu     i686-unknown-linux-musl, runner qemu-i386-static (same binaries as `i686`)
# qemu-user does not emulate bpf()/perf_event_open: the runtime's kernel tests skip there, so
# SLUICE_REQUIRE_KERNEL is unset for these runs (kernel tests belong in guest/run.sh).
#
# Usage: aarch64-ci/cross-test.sh [RUN...] [-- TEST-ARGS...]     default RUNs: aarch64 i686 i686-qemu
# env:   CROSS_CORE_ARGS     test selection for sluice-core    (default: --lib --tests)
#        CROSS_RUNTIME_ARGS  test selection for sluice-runtime (default: --lib; empty: skip)
#        CROSS_OPT_LEVEL     opt-level of the test builds (default 1). Emulated opt-level-0 code is
#                            ~10x slower (core's corruption sweep: 48 s -> 3 s under qemu-aarch64);
#                            debug assertions and overflow checks stay on, as in any dev build.
# Prints one line per run and a closing `cross-test: N passed, M failed` (tests summed over runs);
# exits non-zero if any build or test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do runs+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
[ ${#runs[@]} -gt 0 ] || runs=(aarch64 i686 i686-qemu)
read -r -a core_sel <<< "${CROSS_CORE_ARGS---lib --tests}"
read -r -a rt_sel <<< "${CROSS_RUNTIME_ARGS---lib}"
unset SLUICE_REQUIRE_KERNEL
export CARGO_PROFILE_DEV_OPT_LEVEL=${CROSS_OPT_LEVEL:-1}
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
  start=$(date +%s.%N)
  # native: no runner at all (cargo rejects an empty one); otherwise override .cargo/config.toml
  if [ -n "$runner" ]; then set_runner=("$var=$runner"); else set_runner=(-u "$var"); fi
  rc=0; : > "$log"
  for pkg in sluice-core sluice-runtime; do
    if [ $pkg = sluice-core ]; then sel=("${core_sel[@]}"); else sel=("${rt_sel[@]}"); fi
    [ ${#sel[@]} -gt 0 ] || continue
    echo "=== cross-test $run: cargo test -p $pkg ${sel[*]} --target $target (runner: ${runner:-native})"
    env "${set_runner[@]}" cargo test --locked -p "$pkg" "${sel[@]}" --target "$target" -- "$@" 2>&1 | tee -a "$log"
    r=${PIPESTATUS[0]}; [ "$r" -eq 0 ] || rc=$r
  done
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
