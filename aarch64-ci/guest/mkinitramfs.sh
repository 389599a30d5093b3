#!/bin/bash
# mkinitramfs.sh — build a gzip'd newc initramfs that boots a Debian guest kernel straight into one
# static test binary: busybox init mounts proc, sysfs, devtmpfs, tracefs (/sys/kernel/tracing),
# debugfs, bpffs (/sys/fs/bpf) and a tmpfs /tmp, runs the binary as root, prints
#     SLUICE-GUEST-EXIT=<exit code>
# on the console and powers off.
#
# Usage: aarch64-ci/guest/mkinitramfs.sh ARCH OUT.cpio.gz BINARY [ARGS...]
#   ARCH   amd64|x86_64|arm64|aarch64 (picks the cached busybox, see fetch-kernels.sh)
# env:
#   SLUICE_CACHE   cache root (default ~/.cache/sluice)
#   GUEST_KERNEL   current (default) or backports: whose busybox, config and modules (see run.sh)
#   GUEST_FILES    space-separated host files/dirs copied into the guest under /files
#   GUEST_SHARE    host directory to share over virtio-9p (read-write), mounted in the guest at the
#                  same absolute path; adds the virtio/9p modules (run.sh passes the device)
#   GUEST_CWD      directory to start the binary in when it exists in the guest (default /tmp)
#   GUEST_ENV      space-separated NAME=VALUE pairs exported to the binary; SLUICE_*, RUST_BACKTRACE
#                  and RUST_LOG from the caller's environment are passed along too
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
arch=$1 out=$2 bin=$3; shift 3
case $arch in x86_64|amd64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;;
  *) echo "mkinitramfs: unknown arch '$arch'" >&2; exit 2 ;; esac
d=${SLUICE_CACHE:-$HOME/.cache/sluice}/guest/$arch/${GUEST_KERNEL:-current}
[ -s "$d/busybox" ] || { echo "mkinitramfs: no $arch guest in the cache; run aarch64-ci/guest/fetch-kernels.sh" >&2; exit 1; }
[ -f "$bin" ] || { echo "mkinitramfs: no such binary: $bin" >&2; exit 1; }

w=$(mktemp -d "${TMPDIR:-/tmp}/sluice-initramfs.XXXXXX"); trap 'rm -rf "$w"' EXIT
r=$w/root
mkdir -p "$r"/{bin,proc,sys,dev,tmp,files}
cp "$d/busybox" "$r/bin/busybox"
cp "$bin" "$r/testbin"; chmod 755 "$r/testbin"
for f in ${GUEST_FILES:-}; do cp -a "$f" "$r/files/"; done
# The kernel's configuration where Debian installs it, /boot/config-KVER (the kernels have no
# /proc/config.gz): what a `.kconfig` extern or an attach refusal (kprobe.multi without
# CONFIG_FPROBE) reads on a real system.
if [ -s "$d/config" ] && [ -s "$d/kver" ]; then
  mkdir -p "$r/boot"; cp "$d/config" "$r/boot/config-$(cat "$d/kver")"
fi

# single-quote every word so arguments and values survive the guest shell verbatim
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
args=""; for a in "$@"; do args="$args $(sq "$a")"; done
{
  for kv in ${GUEST_ENV:-}; do echo "export ${kv%%=*}=$(sq "${kv#*=}")"; done
  while IFS='=' read -r k v; do echo "export $k=$(sq "$v")"; done \
    < <(env | grep -E '^(SLUICE_[A-Z0-9_]*|RUST_BACKTRACE|RUST_LOG)=' || true)
} > "$r/env"
share=""
if [ -n "${GUEST_SHARE:-}" ]; then
  cp "$d/modlist" "$r/modlist"; cp -a "$d/modtree/lib" "$r/"
  share=$(cd "$GUEST_SHARE" && pwd)
fi

cat > "$r/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
mount -t tmpfs tmpfs /tmp
if [ -f /modlist ]; then
  while read -r m; do insmod "\$m" || echo "sluice-guest: insmod \$m failed"; done < /modlist
  mkdir -p $(sq "$share")
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 host $(sq "$share") || echo "sluice-guest: 9p mount failed"
fi
. /env
cd $(sq "${GUEST_CWD:-/tmp}") 2>/dev/null || cd /tmp
/testbin$args
echo "SLUICE-GUEST-EXIT=\$?"
sync
poweroff -f
INIT
chmod 755 "$r/init"
mkdir -p "$(dirname "$out")"
(cd "$r" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) > "$out"
