#!/bin/bash
# fetch-kernels.sh — fetch Debian's current stock kernels (linux-image-amd64, linux-image-arm64) and a
# static busybox for each arch into a cache outside the repository, ready for guest/run.sh.
#
# Usage: aarch64-ci/guest/fetch-kernels.sh [--dbg] [--backports] [ARCH...]
#   ARCH         amd64|x86_64, arm64|aarch64 (default both)
#   --dbg        also extract the DWARF vmlinux from linux-image-<abi>-dbg (≈800 MB download per arch)
#   --backports  the kernel of <codename>-backports instead (Debian's 6.12 for bookworm: amd64 has
#                CONFIG_FPROBE, for kprobe.multi), linked as `backports` rather than `current`;
#                run.sh and record.sh boot it with GUEST_KERNEL=backports. The default kernels stay.
# env: SLUICE_CACHE (default ~/.cache/sluice)
#
# Layout: $SLUICE_CACHE/guest/<arch>/<kver>/
#   kernel      amd64: the uncompressed ELF taken out of vmlinuz (QEMU boots it through its PVH note,
#               skipping the xz decompressor, slow under TCG, and KASLR); arm64: the Image (uncompressed)
#   config      the kernel's build config          busybox   static busybox from busybox-static:<arch>
#   modlist     insmod order for virtio-pci/virtio-blk/9p (from `modprobe -D`), modtree/ those .ko files
#   vmlinux     (--dbg) the DWARF vmlinux; its build-id equals the booted kernel's
# and $SLUICE_CACHE/guest/<arch>/current -> <kver> (--backports: .../backports -> <kver>). The ABI is
# resolved through the meta package (the mirror keeps only the newest linux-image-<abi>); a new ABI gets
# a new directory, older ones (linked by neither name) are removed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dbg=false; arches=(); link=current; suite=()
for a in "$@"; do
  case $a in
    --dbg) dbg=true ;;
    --backports) link=backports
      suite=(-t "$(. /etc/os-release && echo "$VERSION_CODENAME")-backports") ;;
    amd64|x86_64) arches+=(amd64) ;;
    arm64|aarch64) arches+=(arm64) ;;
    *) echo "fetch-kernels: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
[ ${#arches[@]} -gt 0 ] || arches=(amd64 arm64)
cache=${SLUICE_CACHE:-$HOME/.cache/sluice}/guest

"$here/../host-packages.sh" >/dev/null      # qemu, cpio, kmod, xz; arm64 package lists
depmod=$(command -v depmod || echo /usr/sbin/depmod); modprobe=$(command -v modprobe || echo /usr/sbin/modprobe)

# apt-get download against lists that went stale (the mirror dropped that version): refresh once, retry.
download() { apt-get download -qq "$@" 2>/dev/null || { apt-get update -qq; apt-get download -qq "$@"; }; }

for arch in "${arches[@]}"; do
  t0=$(date +%s)
  pkg=$(apt-cache depends "${suite[@]}" "linux-image-$arch:$arch" 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
  if [ -z "$pkg" ]; then apt-get update -qq
    pkg=$(apt-cache depends "${suite[@]}" "linux-image-$arch:$arch" | awk '/Depends: linux-image-/{print $2; exit}'); fi
  pkg=${pkg%:*}; kver=${pkg#linux-image-}            # e.g. linux-image-6.1.0-57-arm64 -> 6.1.0-57-arm64
  [ -n "$kver" ] || { echo "fetch-kernels: cannot resolve linux-image-$arch" >&2; exit 1; }
  d=$cache/$arch/$kver
  if [ ! -s "$d/kernel" ] || [ ! -e "$d/kver" ]; then
    rm -rf "$d"; mkdir -p "$d/tmp"; cd "$d/tmp"
    download "${suite[@]}" "$pkg:$arch"; download "busybox-static:$arch"
    dpkg-deb -x "${pkg}"_*_"$arch".deb root
    dpkg-deb -x busybox-static_*_"$arch".deb bb
    cp bb/bin/busybox "$d/busybox"
    cp "root/boot/config-$kver" "$d/config"
    if [ "$arch" = amd64 ]; then
      # vmlinuz = setup code + compressed ELF (6.1: xz, 6.12: zstd): cut at the first magic and
      # decompress that stream (zstd complains about the bytes after it: the ELF is checked instead)
      k=root/boot/vmlinuz-$kver
      off=$(LC_ALL=C grep -m1 -obUaP '\xfd7zXZ\x00' "$k" | head -1 | cut -d: -f1 || true)
      if [ -n "$off" ]; then
        { tail -c +$((off + 1)) "$k" || true; } | xz -dc --single-stream > "$d/kernel.part"
      else
        off=$(LC_ALL=C grep -m1 -obUaP '\x28\xb5\x2f\xfd' "$k" | head -1 | cut -d: -f1 || true)
        [ -n "$off" ] || { echo "fetch-kernels: $k: neither xz nor zstd inside" >&2; exit 1; }
        { tail -c +$((off + 1)) "$k" || true; } | { zstd -dcq 2>/dev/null || true; } > "$d/kernel.part"
      fi
      [ "$(head -c 4 "$d/kernel.part" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
        { echo "fetch-kernels: $k: no ELF kernel inside" >&2; exit 1; }
      mv "$d/kernel.part" "$d/kernel"
    else
      cp "root/boot/vmlinuz-$kver" "$d/kernel"        # arm64 "vmlinuz" is an uncompressed Image
    fi
    # modules to share a host directory over 9p (or attach a disk); order as modprobe would load them
    "$depmod" -b root "$kver"
    for m in virtio_pci virtio_blk 9pnet_virtio 9p; do "$modprobe" -d root -S "$kver" -D "$m"; done \
      | awk '$1=="insmod" && !s[$2]++ {print $2}' | sed "s|^$d/tmp/root||; s|^root||" > "$d/modlist"
    # 6.12's modules are .ko.xz: busybox insmod wants them uncompressed
    while read -r m; do mkdir -p "$d/modtree$(dirname "$m")"; cp "root$m" "$d/modtree$m"
      case $m in *.xz) xz -d "$d/modtree$m" ;; esac; done < "$d/modlist"
    sed -i 's/\.xz$//' "$d/modlist"
    cd "$d"; rm -rf "$d/tmp"
    echo "$kver" > "$d/kver"
  fi
  if $dbg && [ ! -s "$d/vmlinux" ]; then
    mkdir -p "$d/tmp"; cd "$d/tmp"
    download "$pkg-dbg:$arch"
    # vmlinux is an early member of data.tar: stop tar after it instead of reading all 5 GB
    dpkg-deb --fsys-tarfile "${pkg}"-dbg_*_"$arch".deb 2>/dev/null \
      | tar -x --occurrence=1 "./usr/lib/debug/boot/vmlinux-$kver" || true
    mv "usr/lib/debug/boot/vmlinux-$kver" "$d/vmlinux"
    cd "$d"; rm -rf "$d/tmp"
  fi
  ln -sfn "$kver" "$cache/$arch/$link"
  keep=" $(readlink "$cache/$arch/current" || true) $(readlink "$cache/$arch/backports" || true) "
  for old in "$cache/$arch"/*/; do
    old=$(basename "${old%/}"); [ -L "$cache/$arch/$old" ] && continue
    case $keep in *" $old "*) ;; *) rm -rf "${cache:?}/$arch/$old" ;; esac
  done
  echo "fetch-kernels: $arch $kver ($link) ready in $(( $(date +%s) - t0 )) s: $(du -sh "$d" | cut -f1) in $d"
done
