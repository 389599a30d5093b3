#!/bin/sh
# Real eBPF objects no one here wrote, as Debian ships them, for the open/load tests
# (runtime/tests/modern_real.rs). Nothing is vendored: this downloads the packages named
# in objects.sha256 with apt-get, takes the objects out (*.o under /usr/lib/*/bpf/, and
# the BPF ELF objects libbpf-tools' skeletons embed in their executables: found by
# scanning for \177ELF with e_machine 247), and keeps those whose sha256 is pinned.
#
#   tests/real/fetch.sh [CACHE_DIR]
#
# SLUICE_REAL_PIN=1 rewrites objects.sha256 from what the packages hold (after a version
# bump of the "# package" lines).
# CACHE_DIR defaults to $SLUICE_REAL_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/real.
# Then: SLUICE_REAL_OBJS=CACHE_DIR cargo test -p sluice-runtime --test modern_real
# Needs apt-get (Debian 12 sources), dpkg-deb, python3, sha256sum.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${SLUICE_REAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/real}}
list=$here/objects.sha256
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Packages: "# package NAME=VERSION" lines of the list.
pkgs=$(sed -n 's/^# package //p' "$list")
(cd "$work" && apt-get download $pkgs) >&2
for deb in "$work"/*.deb; do
	name=$(dpkg-deb -f "$deb" Package)
	mkdir -p "$work/x/$name"
	dpkg-deb -x "$deb" "$work/x/$name"
done

python3 - "$work/x" "$work/out" <<'PY'
import os, struct, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)

def objects_in(blob):
    """BPF ELF objects embedded in a file (skeletons): \x7fELF, ELF64 LE, e_machine 247;
    the object ends after its section header table."""
    at = 0
    while True:
        at = blob.find(b"\x7fELF", at)
        if at < 0:
            return
        h = blob[at:at + 64]
        if len(h) == 64 and h[4] == 2 and h[5] == 1 and struct.unpack_from("<H", h, 18)[0] == 247:
            shoff, = struct.unpack_from("<Q", h, 40)
            shentsize, shnum = struct.unpack_from("<HH", h, 58)
            end = shoff + shentsize * shnum
            if 64 <= end <= len(blob) - at:
                yield blob[at:at + end]
                at += end
                continue
        at += 4

for pkg in sorted(os.listdir(src)):
    for root, _, files in os.walk(os.path.join(src, pkg)):
        for f in sorted(files):
            path = os.path.join(root, f)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            blob = open(path, "rb").read()
            if f.endswith(".o") and "/bpf" in root:
                found = [blob]
            else:
                found = list(objects_in(blob))
            for i, obj in enumerate(found):
                base = f if f.endswith(".o") else f"{f}.bpf.o" if len(found) == 1 else f"{f}.{i}.bpf.o"
                d = os.path.join(out, pkg)
                os.makedirs(d, exist_ok=True)
                open(os.path.join(d, base), "wb").write(obj)
PY

if [ "${SLUICE_REAL_PIN:-0}" = 1 ]; then
	# Re-pin: rewrite the list with every object the packages hold now.
	{ grep '^#' "$list"; (cd "$work/out" && find . -name '*.o' | sed 's|^\./||' | sort | xargs sha256sum); } >"$list.new"
	mv "$list.new" "$list"
	echo "pinned $(grep -vc '^#' "$list") objects in $list" >&2
fi

# Keep exactly the pinned objects; say what differs.
bad=0
grep -v '^#' "$list" | while read -r sum name; do
	[ -n "$sum" ] || continue
	f=$work/out/$name
	if [ ! -f "$f" ]; then
		echo "missing from the packages: $name" >&2
		exit 1
	fi
	got=$(sha256sum "$f" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		echo "sha256 mismatch: $name ($got)" >&2
		exit 1
	fi
	mkdir -p "$cache/$(dirname "$name")"
	cp "$f" "$cache/$name"
done || bad=1
[ "$bad" = 0 ] || { echo "fetch failed; objects in $work/out" >&2; exit 1; }
n=$(grep -vc '^#' "$list")
echo "$n objects verified in $cache" >&2
echo "$cache"
