#!/bin/bash
# build-static.sh — build the `sluice` binary as a static musl executable for x86_64, i686 and
# aarch64 with the workspace release profile, then for each: print its (stripped) size against the
# budget, prove it is static, and run it once (x86_64/i686 natively, aarch64 under qemu-aarch64-static).
#
# Usage: targets/build-static.sh [TARGET...]      default: all three *-unknown-linux-musl targets
# env:   SLUICE_SIZE_BUDGET   bytes per binary (default 1572864 = 1.5 MiB)
#        SLUICE_SMOKE_ARGS    arguments for the smoke run (default: --help); it must exit 0
#        SLUICE_COMPARE_ARGS  a second run whose output must be byte-identical on every target
#                             (default: inspect, i.e. the embedded demo object; empty: skip)
#        CARGO_TARGET_DIR     honoured as usual
# Exit status: 0 only if every target built, is static, fits the budget and ran with status 0.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-musl i686-unknown-linux-musl aarch64-unknown-linux-musl)
budget=${SLUICE_SIZE_BUDGET:-1572864}
read -r -a smoke <<< "${SLUICE_SMOKE_ARGS:---help}"
read -r -a compare <<< "${SLUICE_COMPARE_ARGS-inspect}"
tdir=${CARGO_TARGET_DIR:-target}
host=$(uname -m)

# The linker (rust-lld, all three) comes from .cargo/config.toml. What makes the shipped binaries
# lean goes in per target here, not in the config, because tests (panic = unwind) build for the
# same targets: no unwind tables (the release profile aborts on panic; targets/no-unwind.ld
# drops std's and musl's too), identical functions folded, and x86_64 linked static like the
# other two instead of static-pie (its relocations and GOT, ~35 KB). A caller's RUSTFLAGS win
# over these, as cargo orders them.
lean="-C force-unwind-tables=no -C link-arg=--icf=all -C link-arg=--no-eh-frame-hdr -C link-arg=$PWD/targets/no-unwind.ld"
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="$lean -C relocation-model=static"
export CARGO_TARGET_I686_UNKNOWN_LINUX_MUSL_RUSTFLAGS="$lean"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="$lean"
args=(); for t in "${targets[@]}"; do args+=(--target "$t"); done
cargo build --release --locked -p sluice "${args[@]}"

# Foreign binaries go through user-mode QEMU: binfmt_misc is not assumed to be mounted.
runner_for() {
  case $1 in
    x86_64-*)  [ "$host" = x86_64 ] && echo "" || echo qemu-x86_64-static ;;
    i686-*)    [ "$host" = x86_64 ] || [ "$host" = i686 ] && echo "" || echo qemu-i386-static ;;
    aarch64-*) [ "$host" = aarch64 ] && echo "" || echo qemu-aarch64-static ;;
    *) echo "" ;;
  esac
}

fail=0; n=0; sizes=()
for t in "${targets[@]}"; do
  n=$((n + 1))
  bin=$tdir/$t/release/sluice
  size=$(stat -c %s "$bin")
  desc=$(file -b "$bin")
  static=no
  case $desc in *"statically linked"*|*"static-pie linked"*) static=yes ;; esac
  # belt and braces: a dynamically linked executable has an INTERP program header
  if command -v readelf >/dev/null && readelf -lW "$bin" | grep -q ' INTERP '; then static=no; fi
  runner=$(runner_for "$t")
  set +e
  # shellcheck disable=SC2086 # an empty runner must vanish
  out=$($runner "$bin" "${smoke[@]}" 2>&1 </dev/null); rc=$?
  if [ "$rc" -eq 126 ] && [ -z "$runner" ] && [ "${t%%-*}" = i686 ]; then
    runner=qemu-i386-static; out=$($runner "$bin" "${smoke[@]}" 2>&1 </dev/null); rc=$?   # no IA32 emulation
  fi
  same=skipped
  if [ ${#compare[@]} -gt 0 ]; then
    # shellcheck disable=SC2086
    cout=$($runner "$bin" "${compare[@]}" 2>&1 </dev/null); crc=$?
    if [ "$crc" -ne 0 ]; then same="exit $crc"
    elif [ -z "${reference+x}" ]; then reference=$cout; same=reference
    elif [ "$cout" = "$reference" ]; then same=identical
    else same=DIFFERENT; diff <(printf '%s\n' "$reference") <(printf '%s\n' "$cout") | head -10 | sed 's/^/    | /'; fi
  fi
  set -e
  verdict=OK
  if [ "$static" != yes ] || [ "$size" -gt "$budget" ] || [ "$rc" -ne 0 ]; then verdict=FAIL; fi
  case $same in skipped|reference|identical) ;; *) verdict=FAIL ;; esac
  [ "$verdict" = OK ] || fail=$((fail + 1))
  printf '%-27s %9d bytes (%s KiB, %s%% of budget)  static=%s  run[%s %s]=%d  `%s`: %s  %s\n' "$t" "$size" \
    "$(awk -v s="$size" 'BEGIN{printf "%.1f", s/1024}')" "$(awk -v s="$size" -v b="$budget" 'BEGIN{printf "%.0f", 100*s/b}')" \
    "$static" "${runner:-native}" "${smoke[*]}" "$rc" "${compare[*]}" "$same" "$verdict"
  echo "    file: $desc"
  [ "$rc" -eq 0 ] || printf '%s\n' "$out" | head -20 | sed 's/^/    | /'
  sizes+=("${t%%-*}=$size")
done
echo "build-static: $((n - fail)) passed, $((fail)) failed (budget $budget bytes each; ${sizes[*]})"
[ "$fail" -eq 0 ]
