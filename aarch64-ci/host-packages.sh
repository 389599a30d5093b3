#!/bin/bash
# host-packages.sh — install the Debian packages the cross and guest scripts need, if missing.
#
#   qemu-user-static            qemu-aarch64-static / qemu-i386-static (cross-test.sh)
#   qemu-system-x86, -arm       guest kernels under TCG (guest/run.sh)
#   busybox-static cpio         the guest initramfs (guest/mkinitramfs.sh)
#   kmod xz-utils zstd          depmod/modprobe -D for module order; PVH kernel extraction (6.1's
#                               vmlinuz is xz, 6.12's zstd) and 6.12's .ko.xz modules
#
# qemu comes from bookworm-backports: the machine image ships qemu-utils 10.x from there, and
# bookworm's qemu 7.2 system packages conflict with it ("qemu-utils : Breaks: qemu-system-common").
# The backports source is added with its default (low) pin, so nothing else moves unless asked.
# Also enables the arm64 foreign architecture (package lists only) for `apt-get download ...:arm64`.
# Idempotent; needs root. Usage: host-packages.sh [--check]   (--check: only report what is missing)
set -euo pipefail

need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v qemu-i386-static    >/dev/null || need+=(qemu-user-static)
command -v qemu-system-x86_64  >/dev/null || need+=(qemu-system-x86)
command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm)
base=()
[ -x /bin/busybox ]            || base+=(busybox-static)
command -v cpio >/dev/null     || base+=(cpio)
[ -x /usr/sbin/depmod ] || [ -x /sbin/depmod ] || base+=(kmod)
command -v xz >/dev/null       || base+=(xz-utils)
command -v zstd >/dev/null     || base+=(zstd)
foreign_ok=true
dpkg --print-foreign-architectures | grep -qx arm64 || foreign_ok=false

if [ "${1:-}" = --check ]; then
  echo "host-packages: missing: ${need[*]:-} ${base[*]:-}; arm64 foreign arch: $foreign_ok"
  [ ${#need[@]} -eq 0 ] && [ ${#base[@]} -eq 0 ] && $foreign_ok
  exit
fi
if [ ${#need[@]} -eq 0 ] && [ ${#base[@]} -eq 0 ] && $foreign_ok; then
  echo "host-packages: all present"; exit 0
fi

export DEBIAN_FRONTEND=noninteractive
update=false
if [ ${#need[@]} -gt 0 ] && ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
  uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "${uri:-http://deb.debian.org/debian}" > /etc/apt/sources.list.d/bookworm-backports.sources
  update=true
fi
if ! $foreign_ok; then dpkg --add-architecture arm64; update=true; fi
# apt-cache look-ups need fresh lists too (fetch-kernels resolves the kernel ABI through them)
if $update || [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ]; then
  apt-get update -qq
fi
if [ ${#need[@]} -gt 0 ]; then
  # shellcheck disable=SC2046
  apt-get install -y -qq --no-install-recommends -t bookworm-backports $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi
if [ ${#base[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${base[@]}" >/dev/null
fi
echo "host-packages: installed ${need[*]:-} ${base[*]:-}"
