#!/bin/bash
# record.sh — the kprobe record tests inside real guest kernels: builds runtime/tests/guest_kprobe.rs
# (one test binary) and the `sluice` binary as static musl executables for each arch (for the amd64
# guest also the i686 `sluice`, run there by the kernel's IA32 emulation), boots ONE guest
# per arch with run.sh (GUEST_SMP vCPUs, default 2, so per-CPU attach and rings are exercised), and
# runs the tests there with SLUICE_REQUIRE_KERNEL=1 SLUICE_REQUIRE_KPROBES=1 (a skip is a failure).
# The fixture and the sluice binary go into the initramfs (/files); no 9p share is needed.
#
# Usage: aarch64-ci/guest/record.sh [ARCH...]     default: amd64 arm64 (fetch-kernels.sh first)
# env:   GUEST_SMP (2), CROSS_OPT_LEVEL (1, as cross-test.sh: the same aarch64 artifacts serve both),
#        GUEST_KERNEL (current; backports: the kernel of fetch-kernels.sh --backports, where amd64's
#        6.12 attaches the kprobe.multi test's programs that 6.1 refuses),
#        GUEST_LOG_DIR, GUEST_TIMEOUT: see run.sh
# Prints the guests' consoles, then per arch the test binary's `guest-figures` lines, its exit code
# and boot→poweroff time, and whether this host's `perf script` reads the perf.data file the guest
# wrote (sent over the console in base64) with the samples the guest printed; exits non-zero if any
# build, guest run or that comparison failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
arches=("$@"); [ ${#arches[@]} -gt 0 ] || arches=(amd64 arm64)
export CARGO_PROFILE_DEV_OPT_LEVEL=${CROSS_OPT_LEVEL:-1}
tdir=${CARGO_TARGET_DIR:-$PWD/target}
w=$(mktemp -d "${TMPDIR:-/tmp}/guest-record.XXXXXX"); trap 'rm -rf "$w"' EXIT
rc=0; report=()
for arch in "${arches[@]}"; do
  case $arch in amd64|x86_64) arch=amd64; t=x86_64-unknown-linux-musl ;;
    arm64|aarch64) arch=arm64; t=aarch64-unknown-linux-musl ;;
    *) echo "guest-record: unknown arch $arch" >&2; exit 2 ;; esac
  b0=$(date +%s)
  if ! cargo build -q --locked -p sluice --target "$t"; then
    echo "guest-record: building sluice for $t failed" >&2; rc=1; continue
  fi
  # The x86_64 guest also runs the i686 build (issue 14: kprobe prologues for the running
  # kernel's pt_regs and calling convention, not for an i386 kernel's), as /files/sluice-i686.
  i686=""; i686_env=""
  if [ "$arch" = amd64 ]; then
    if ! cargo build -q --locked -p sluice --target i686-unknown-linux-musl; then
      echo "guest-record: building sluice for i686-unknown-linux-musl failed" >&2; rc=1; continue
    fi
    cp "$tdir/i686-unknown-linux-musl/debug/sluice" "$w/sluice-i686"
    i686="tests/bpf/dwarf_words.o $w/sluice-i686"; i686_env="SLUICE_BIN_I686=/files/sluice-i686"
  fi
  # the test binary's path from cargo's JSON messages (no jq needed)
  testbin=$(cargo test -q --locked -p sluice-runtime --test guest_kprobe --target "$t" --no-run \
              --message-format=json | sed -n 's/.*"executable":"\([^"]*guest_kprobe-[^"]*\)".*/\1/p' | tail -1)
  if [ -z "$testbin" ] || [ ! -x "$testbin" ]; then
    echo "guest-record: building the guest_kprobe test for $t failed" >&2; rc=1; continue
  fi
  build_s=$(($(date +%s) - b0))
  GUEST_SMP=${GUEST_SMP:-2} \
  GUEST_FILES="tests/bpf/guest_kprobes.o tests/bpf/guest_attach.o tests/bpf/attach_multi.o $tdir/$t/debug/sluice $i686" \
  GUEST_ENV="SLUICE_FIXTURES=/files SLUICE_BIN=/files/sluice $i686_env SLUICE_REQUIRE_KERNEL=1 SLUICE_REQUIRE_KPROBES=1" \
    aarch64-ci/guest/run.sh "$arch" "$testbin" -- --test-threads=1 --nocapture 2>&1 | tee "$w/$arch.log"
  r=${PIPESTATUS[0]}; [ "$r" -eq 0 ] || rc=1
  report+=("--- $arch ($t, ${GUEST_KERNEL:-current} kernel, build ${build_s} s, ${GUEST_SMP:-2} vCPUs): exit $r")
  # The perf.data file the guest's sluice wrote (sluice_record_perf_data_goes_to_the_host),
  # read by this host's perf: the same do_filp_open samples (tid, CPU, time, event) as the
  # guest's sluice printed (its comm may be ":TID" for a task gone before printing; perf
  # has it from the COMM records), and nothing on perf's stderr.
  if [ "$r" -eq 0 ]; then
    tr -d '\r' < "$w/$arch.log" | sed -n 's/^.*guest-perf-data \([A-Za-z0-9+/=]*\)$/\1/p' |
      base64 -d > "$w/$arch.data" 2>/dev/null
    tr -d '\r' < "$w/$arch.log" | sed -n 's/^.*guest-perf-text //p' | grep '_do_filp_open:' |
      awk '{split($2, p, "/"); print p[2], $3, $4, $5}' > "$w/$arch.want"
    if ! command -v perf >/dev/null; then
      report+=("  perf.data: no perf on this host to read it"); rc=1
    else
      perf script -i "$w/$arch.data" -F comm,tid,cpu,time,event 2>"$w/$arch.perr0" |
        grep '_do_filp_open:' | awk '{print $2, $3, $4, $5}' > "$w/$arch.got"
      pr=${PIPESTATUS[0]}
      # The kernel's build-id as the file's BUILD_ID feature gives it, read back by perf.
      kid=$(perf buildid-list -i "$w/$arch.data" 2>/dev/null |
              sed -n 's/^\([0-9a-f]*\) \[kernel.kallsyms\]$/\1/p')
      # Two lines are about this host, not the file, and perf prints them for any file of
      # that guest, whoever wrote it: an x86_64 perf built with only its own arch's libunwind
      # says so once per task of a file from another arch, and perf resolving a sample's
      # kernel address says it has not got the guest's kernel (that build-id).
      grep -vx -e 'unwind: target platform=[a-z0-9_]* is not supported' \
        -e "No kallsyms or vmlinux with build-id ${kid:-none} was found" "$w/$arch.perr0" \
        > "$w/$arch.perr" || true
      if [ "$pr" -ne 0 ] || [ -z "$kid" ] || [ -s "$w/$arch.perr" ] || [ ! -s "$w/$arch.want" ] ||
          ! cmp -s "$w/$arch.want" "$w/$arch.got"; then
        report+=("  perf.data: the host's perf script disagrees with the guest's sluice (perf exit $pr, kernel build-id '${kid}'):")
        while IFS= read -r l; do report+=("    $l"); done < <(diff "$w/$arch.want" "$w/$arch.got"; cat "$w/$arch.perr")
        rc=1
      else
        report+=("  perf.data: the host's $(perf --version) read $(wc -l < "$w/$arch.got") do_filp_open samples of the guest's file ($(stat -c %s "$w/$arch.data") bytes), as the guest's sluice printed them; kernel build-id $kid; perf's other stderr lines: $(grep -c . "$w/$arch.perr0") (unwinder support, the guest's kernel not on this host)")
      fi
    fi
  fi
  while IFS= read -r l; do report+=("  $l"); done < <(tr -d '\r' < "$w/$arch.log" |
    grep -oE 'guest-figures .*|^test result: .*|[^ ].*boot→poweroff' | sed 's/^guest-figures [a-z0-9_]*: //')
done
echo "=== guest-record summary"
printf '%s\n' "${report[@]}"
exit $rc
