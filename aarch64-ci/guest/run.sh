#!/bin/bash
# run.sh — boot a fresh Debian-kernel guest (QEMU TCG) per static test binary, run the binary inside
# as root, show its console output and propagate its exit code.
#
# Usage: aarch64-ci/guest/run.sh ARCH BINARY... [-- ARGS...]    one VM per BINARY, each gets ARGS
#        aarch64-ci/guest/run.sh --exec ARCH BINARY [ARGS...]    cargo-runner form: one binary, its args,
#            started in the caller's working directory if the guest has it (see GUEST_SHARE), e.g.
#            CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER="$PWD/aarch64-ci/guest/run.sh --exec arm64"
#   ARCH: amd64|x86_64 (uncompressed PVH ELF kernel, default CPU) or arm64|aarch64 (-M virt -cpu max;
#         pauth-impdef=on because QEMU's architected pointer authentication is slow under TCG).
#   Always -accel tcg: this host's KVM cannot run stock kernels (QEMU.md).
# Exit status: the binary's own status (several binaries: the first non-zero one); 125 when the guest
# printed no exit marker (kernel panic, timeout); 2 for usage errors.
# env: GUEST_TIMEOUT s per VM (300)   GUEST_MEM MiB (1024)   GUEST_APPEND extra kernel cmdline
#      GUEST_SMP vCPUs (1; more run as MTTCG threads, e.g. 2 to test per-CPU rings)
#      GUEST_LOG_DIR keep each raw serial log there        SLUICE_CACHE cache root (fetch-kernels.sh)
#      GUEST_SHARE, GUEST_FILES, GUEST_ENV, GUEST_CWD: see mkinitramfs.sh
#      GUEST_KASLR 1: boot without `nokaslr` (see below)
#      GUEST_KERNEL current (default: Debian's stock kernel) or backports (fetch-kernels.sh --backports)
# Guests boot with `nokaslr` so kernel addresses equal the vmlinux link addresses on both arches,
# unless GUEST_KASLR=1. Then the arm64 guest's kernel is randomized (it relocates itself, seeded by
# the /chosen/kaslr-seed QEMU's virt machine writes into the device tree, dtb-kaslr-seed=on by
# default); the amd64 guest stays at its link addresses whatever the flag: its PVH entry skips
# the bzImage decompressor, which is where x86 KASLR happens.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec_mode=false
[ "${1:-}" = --exec ] && { exec_mode=true; shift; }
[ $# -ge 2 ] || { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
arch=$1; shift
case $arch in
  x86_64|amd64)  arch=amd64; qemu=(qemu-system-x86_64 -accel tcg); con=ttyS0 ;;
  aarch64|arm64) arch=arm64; qemu=(qemu-system-aarch64 -accel tcg -M virt -cpu max,pauth-impdef=on); con=ttyAMA0 ;;
  *) echo "guest-run: unknown arch '$arch' (amd64|x86_64|arm64|aarch64)" >&2; exit 2 ;;
esac
bins=(); args=()
if $exec_mode; then
  bins=("$1"); shift; args=("$@")
  export GUEST_CWD=${GUEST_CWD:-$PWD}
else
  while [ $# -gt 0 ] && [ "$1" != -- ]; do bins+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift; args=("$@")
fi
case ${GUEST_KERNEL:=current} in current) fetch=$arch ;; backports) fetch="--backports $arch" ;;
  *) echo "guest-run: GUEST_KERNEL must be current or backports, not '$GUEST_KERNEL'" >&2; exit 2 ;; esac
export GUEST_KERNEL
d=${SLUICE_CACHE:-$HOME/.cache/sluice}/guest/$arch/$GUEST_KERNEL
[ -s "$d/kernel" ] || { echo "guest-run: no $arch kernel in the cache; run aarch64-ci/guest/fetch-kernels.sh $fetch" >&2; exit 2; }
command -v "${qemu[0]}" >/dev/null || { echo "guest-run: ${qemu[0]} missing; run aarch64-ci/host-packages.sh" >&2; exit 2; }
kver=$(cat "$d/kver")
kaslr=nokaslr; [ "${GUEST_KASLR:-0}" = 1 ] && kaslr=
w=$(mktemp -d "${TMPDIR:-/tmp}/sluice-guest.XXXXXX"); trap 'rm -rf "$w"' EXIT
share_dev=()
[ -n "${GUEST_SHARE:-}" ] && share_dev=(-fsdev "local,id=fs0,path=$GUEST_SHARE,security_model=none"
                                         -device virtio-9p-pci,fsdev=fs0,mount_tag=host)

first_bad=0; pass=0; fail=0; results=()
for bin in "${bins[@]}"; do
  name=$(basename "$bin")
  if ! "$here/mkinitramfs.sh" "$arch" "$w/initrd.gz" "$bin" "${args[@]}"; then
    fail=$((fail + 1)); [ "$first_bad" -ne 0 ] || first_bad=2; results+=("  $name: initramfs failed"); continue
  fi
  log=$w/serial.log; : > "$log"
  t0=$(date +%s.%N)
  timeout "${GUEST_TIMEOUT:-300}" "${qemu[@]}" -nodefaults -no-user-config -display none -no-reboot \
    -m "${GUEST_MEM:-1024}" -smp "${GUEST_SMP:-1}" -serial "file:$log" -kernel "$d/kernel" -initrd "$w/initrd.gz" \
    -append "console=$con panic=-1 quiet loglevel=1 $kaslr ${GUEST_APPEND:-}" "${share_dev[@]}" \
    </dev/null >"$w/qemu.out" 2>&1
  qrc=$?
  secs=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
  [ -z "${GUEST_LOG_DIR:-}" ] || { mkdir -p "$GUEST_LOG_DIR"; cp "$log" "$GUEST_LOG_DIR/$arch-$name.log"; }
  # the guest's console, minus the line that only says it powered off
  tr -d '\r' < "$log" | grep -v -E '^\[ *[0-9]+\.[0-9]+\] reboot: Power down$'
  rc=$(tr -d '\r' < "$log" | sed -n 's/.*SLUICE-GUEST-EXIT=\([0-9][0-9]*\)$/\1/p' | tail -1)
  if [ -z "$rc" ]; then
    why="no exit marker"; [ "$qrc" -eq 124 ] && why="timed out after ${GUEST_TIMEOUT:-300} s"
    echo "guest-run: $arch $name: $why (qemu status $qrc)" >&2; sed 's/^/  qemu: /' "$w/qemu.out" >&2
    rc=125
  fi
  if [ "$rc" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); [ "$first_bad" -ne 0 ] || first_bad=$rc; fi
  results+=("$(printf '  %-40s exit %3d  %5.1f s boot→poweroff' "$name" "$rc" "$secs")")
done
echo "=== guest-run $arch ($kver, TCG):"
printf '%s\n' "${results[@]}"
echo "guest-run $arch: $pass passed, $fail failed"
exit "$first_bad"
