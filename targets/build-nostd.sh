#!/bin/bash
# build-nostd.sh — build targets/nostd-example (sluice-core embedded on bare-metal aarch64, no std,
# no allocator) with and without the `defmt` feature, link it with rust-lld, and run both builds on
# QEMU's aarch64 `virt` board with semihosting: the example prints what it opened and relocated and
# exits 0 only if every check held.
# Usage: targets/build-nostd.sh [--no-run]
# env:   CARGO_TARGET_DIR honoured (default: targets/nostd-example/target)
set -uo pipefail
cd "$(dirname "$0")/nostd-example"          # its .cargo/config.toml (target, runner) applies from here
run=true; [ "${1:-}" = --no-run ] && run=false
command -v qemu-system-aarch64 >/dev/null || { $run && echo "build-nostd: qemu-system-aarch64 missing (aarch64-ci/host-packages.sh); building only"; run=false; }
tdir=${CARGO_TARGET_DIR:-target}
pass=0; fail=0
for variant in plain defmt; do
  feat=(); [ "$variant" = defmt ] && feat=(--features defmt)
  if ! cargo build --release --locked "${feat[@]}"; then
    echo "build-nostd: $variant: build FAILED"; fail=$((fail + 1)); continue
  fi
  elf=$tdir/aarch64-unknown-none/release/sluice-nostd-example
  size=$(stat -c %s "$elf")
  text=$( (command -v size >/dev/null && size -A "$elf" | awk '$1==".text"{print $2}') || echo "?")
  line="build-nostd: $variant: linked, ELF $size bytes (.text $text)"
  if $run; then
    rm -f sluice-defmt.bin
    timeout 60 cargo run -q --release --locked "${feat[@]}"; rc=$?
    line="$line, QEMU exit $rc"
    if [ "$variant" = defmt ]; then
      frames=$(stat -c %s sluice-defmt.bin 2>/dev/null || echo 0)
      line="$line, $frames bytes of defmt frames"
      [ "$frames" -gt 0 ] || rc=1
    fi
    [ "$rc" -eq 0 ] || { echo "$line: FAILED"; fail=$((fail + 1)); continue; }
  fi
  echo "$line: ok"; pass=$((pass + 1))
done
echo "build-nostd: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
