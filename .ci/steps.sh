#!/usr/bin/env bash
# The named CI steps. `bash .ci/steps.sh [STEP ...]` runs the given steps (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
export SLUICE_REQUIRE_KERNEL=1
export CARGO_TERM_COLOR=never

step_fmt() { cargo fmt --all -- --check; }
step_clippy() { cargo clippy --workspace --all-targets --locked -- -D warnings; }
# The README's test command, with kernel tests required, and the real objects Debian ships
# (downloaded and checked against their pinned sha256, never vendored) opened and loaded.
# The guest kernels' -dbg vmlinux images come first, so that the DWARF tests on them
# (runtime/tests/dwarf_vmlinux.rs, vs perf probe -k) run instead of skipping.
step_test() {
	local real
	real=$(tests/real/fetch.sh "${SLUICE_CACHE:-$HOME/.cache/sluice}/real")
	aarch64-ci/host-packages.sh && aarch64-ci/guest/fetch-kernels.sh --dbg
	SLUICE_REAL_OBJS=$real SLUICE_REQUIRE_VMLINUX=1 cargo test --workspace --locked
}
step_nostd() {
	cargo build -p sluice-core --locked --target aarch64-unknown-none
	cargo build -p sluice-core --locked --target aarch64-unknown-none --features defmt
}
# i386 for real: the runtime's kernel tests built for i686 run natively on this x86_64
# kernel (IA32 emulation), so bpf() is syscall 357 through `int 0x80`.
step_i686() { cargo test --locked -p sluice-core -p sluice-runtime --target i686-unknown-linux-musl; }
# targets/ and aarch64-ci/ (see their READMEs): static musl binaries for the three arches, tests
# under qemu-user, sluice-core on bare-metal aarch64 under QEMU, guest kernels under QEMU TCG.
step_static() { targets/build-static.sh; }
step_cross() { aarch64-ci/cross-test.sh; }
step_nostd_example() { aarch64-ci/host-packages.sh && targets/build-nostd.sh; }
step_guest() { aarch64-ci/host-packages.sh && aarch64-ci/guest/fetch-kernels.sh && aarch64-ci/guest/smoke.sh; }
# Kprobe record tests (runtime/tests/guest_kprobe.rs + the sluice binary) in one x86_64 and one
# arm64 guest kernel with 2 vCPUs; the host kernel has no kprobes, so there they only skip. Then
# the same amd64 binary in Debian's backports kernel (6.12, CONFIG_FPROBE: kprobe.multi attaches
# there; ≈30 s more once its download is cached, ≈60 s the first time).
step_guest_record() {
	aarch64-ci/host-packages.sh && aarch64-ci/guest/fetch-kernels.sh && aarch64-ci/guest/record.sh &&
		aarch64-ci/guest/fetch-kernels.sh --backports amd64 && GUEST_KERNEL=backports aarch64-ci/guest/record.sh amd64
}
# The second seed's scenario (runtime/tests/guest_seed.rs, aarch64-ci/guest/seed.sh): the probe
# resolved on this host from each guest kernel's -dbg vmlinux (≈0.8 GB download per arch, cached),
# compared with perf probe -D, recorded in the x86_64 and arm64 guests.
step_guest_seed() { aarch64-ci/host-packages.sh && aarch64-ci/guest/fetch-kernels.sh --dbg && aarch64-ci/guest/seed.sh; }
step_lockfile() { git diff --exit-code Cargo.lock; }
# No module cycle in any crate (ARCHITECTURE.md): files as nodes, imports and inherent-method
# calls across files as edges, re-exports followed to the defining file.
step_cycles() {
	local c
	for c in core runtime cli; do python3 .ci/module-cycles.py "$c/src" --methods || return 1; done
	# ... and no source file over 900 lines outside tests.
	local big
	big=$(find core/src runtime/src cli/src -name '*.rs' ! -name '*tests.rs' -exec awk 'END { if (NR > 900) print FILENAME ": " NR " lines" }' {} \;)
	[ -z "$big" ] || { echo "$big"; return 1; }
}

all=(fmt clippy cycles test nostd i686 nostd_example static cross guest guest_record guest_seed lockfile)
steps=("${@:-${all[@]}}")
failed=()
for s in "${steps[@]}"; do
	echo "=== [ci] step: $s"
	start=$(date +%s)
	if "step_$s"; then
		echo "=== [ci] step: $s ok ($(($(date +%s) - start)) s)"
	else
		echo "=== [ci] step: $s FAILED"
		failed+=("$s")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "=== [ci] FAILED: ${failed[*]}"
	exit 1
fi
echo "=== [ci] all steps passed: ${steps[*]}"
