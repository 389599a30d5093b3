#!/bin/bash
# smoke.sh — prove the guest infrastructure end to end: build guest/smoke (a static musl test binary
# that creates, fires and removes a kprobe through tracefs) for x86_64 and aarch64, then boot one
# guest per arch with run.sh. Also checks that a non-zero exit code (7) comes back from the guest.
# Usage: aarch64-ci/guest/smoke.sh [ARCH...]     (default: amd64 arm64; fetch-kernels.sh first)
set -uo pipefail
cd "$(dirname "$0")/../.."
arches=("$@"); [ ${#arches[@]} -gt 0 ] || arches=(amd64 arm64)
tdir=${CARGO_TARGET_DIR:-$PWD/target}/guest-smoke
rc=0
for arch in "${arches[@]}"; do
  case $arch in amd64|x86_64) t=x86_64-unknown-linux-musl ;; arm64|aarch64) t=aarch64-unknown-linux-musl ;;
    *) echo "smoke: unknown arch $arch" >&2; exit 2 ;; esac
  cargo build -q --release --locked --manifest-path aarch64-ci/guest/smoke/Cargo.toml --target "$t" --target-dir "$tdir" || exit 1
  bin=$tdir/$t/release/guest-smoke
  aarch64-ci/guest/run.sh "$arch" "$bin" || rc=1
  aarch64-ci/guest/run.sh "$arch" "$bin" -- --exit 7 >/dev/null; got=$?
  if [ "$got" -eq 7 ]; then echo "smoke $arch: exit code 7 propagated"; else echo "smoke $arch: expected exit 7, got $got"; rc=1; fi
done
exit $rc
