#!/usr/bin/env python3
"""Load the programs of a legacy fixture into the kernel verifier (root only).

Modern libbpf (and so bpftool) refuses SEC("maps") objects, so this tiny
independent loader checks that the legacy fixtures' programs are what their
comments say: it creates the maps from the definitions (any definition size,
inferred as section size / map symbols), patches ld_imm64 map relocations
with the map fds, prepends `rN = 0` for N in 2..5 to programs whose section
names declare arguments (a stand-in for sluice's prologue), and prints one
line per program: OK, or the verifier's last lines.

    tests/bpf/verify_legacy.py tests/bpf/legacy_maps.o [...]

It is a check tool for the fixtures, not part of sluice.
"""
import ctypes
import os
import re
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
SYS_BPF = 321  # x86_64
BPF_MAP_CREATE, BPF_PROG_LOAD = 0, 5
ARRAY_OF_MAPS, HASH_OF_MAPS = 12, 13


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    fd = libc.syscall(SYS_BPF, cmd, buf, 128)
    return fd, ctypes.get_errno()


def parse(data):
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "ELF64 LE only"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = []
    for i in range(shnum):
        name, typ, flags, _, off, size, link, info, _, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append(dict(name=name, type=typ, flags=flags, off=off, size=size,
                         link=link, info=info, entsize=entsize))
    strtab = secs[shstrndx]
    for s in secs:
        o = strtab["off"] + s["name"]
        s["name"] = data[o:data.index(b"\0", o)].decode()
    return secs


def main(path):
    data = open(path, "rb").read()
    secs = parse(data)
    symtab = next(s for s in secs if s["type"] == 2)
    strs = secs[symtab["link"]]
    syms = []
    for o in range(symtab["off"], symtab["off"] + symtab["size"], 24):
        name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, o)
        so = strs["off"] + name
        syms.append(dict(name=data[so:data.index(b"\0", so)].decode(), shndx=shndx,
                         value=value, type=info & 15))
    names = [s["name"] for s in secs]
    license = b"GPL"
    if "license" in names:
        s = secs[names.index("license")]
        license = data[s["off"]:s["off"] + s["size"]].split(b"\0")[0]
    fds = {}
    if "maps" in names:
        mi = names.index("maps")
        ms = secs[mi]
        msyms = sorted((s for s in syms if s["shndx"] == mi and s["type"] != 3),
                       key=lambda s: s["value"])
        dsize = ms["size"] // len(msyms)
        defs = {}
        for s in msyms:
            w = struct.unpack_from("<%dI" % (dsize // 4), data, ms["off"] + s["value"])
            defs[s["value"] // dsize] = (s, w)
        order = sorted(defs, key=lambda i: defs[i][1][0] in (ARRAY_OF_MAPS, HASH_OF_MAPS))
        byidx = {}
        for i in order:
            s, w = defs[i]
            flags = w[4] if dsize >= 20 else 0
            inner = 0
            if w[0] in (ARRAY_OF_MAPS, HASH_OF_MAPS):
                inner = byidx[w[8]]  # bpf_elf_map inner_idx
            fd, err = bpf(BPF_MAP_CREATE, struct.pack("<6I", w[0], w[1], w[2], w[3], flags, inner))
            if fd < 0:
                print("%s: map %s: create failed: %s" % (path, s["name"], os.strerror(err)))
                return 1
            byidx[i] = fd
            fds[s["name"]] = fd
    bad = 0
    for i, s in enumerate(secs):
        if s["type"] != 1 or not s["flags"] & 4 or s["size"] == 0 or s["name"] == ".text":
            continue
        name = s["name"]
        insns = bytearray(data[s["off"]:s["off"] + s["size"]])
        for r in secs:
            if r["type"] != 9 or r["info"] != i:
                continue
            for o in range(r["off"], r["off"] + r["size"], 16):
                off, info = struct.unpack_from("<QQ", data, o)
                sym = syms[info >> 32]
                if sym["name"] in fds:
                    insns[off + 1] = (insns[off + 1] & 0x0F) | 0x10  # BPF_PSEUDO_MAP_FD
                    struct.pack_into("<i", insns, off + 4, fds[sym["name"]])
        nargs = 0
        m = re.search(r"\((.*)\)$", name)
        if m:
            nargs = len(m.group(1).split(","))
        elif "=" in name:
            nargs = len(name.split()) - 1
        prologue = b"".join(struct.pack("<BBhi", 0xB7, r, 0, 0) for r in range(2, 2 + nargs))
        prog = prologue + bytes(insns)
        ptype = 1 if name.startswith("socket") else 5 if name.startswith("tracepoint/") else 2
        log = ctypes.create_string_buffer(1 << 20)
        lic = ctypes.create_string_buffer(license)
        ibuf = ctypes.create_string_buffer(prog, len(prog))
        attr = struct.pack("<IIQQIIQI", ptype, len(prog) // 8, ctypes.addressof(ibuf),
                           ctypes.addressof(lic), 1, len(log), ctypes.addressof(log), 0)
        fd, err = bpf(BPF_PROG_LOAD, attr)
        if fd >= 0:
            print("%s: [%s] OK (%d insns, %d prologue)" % (path, name, len(prog) // 8, nargs))
            os.close(fd)
        else:
            bad += 1
            tail = [l for l in log.value.decode(errors="replace").splitlines() if l][-3:]
            print("%s: [%s] REFUSED (%s): %s" % (path, name, os.strerror(err), " | ".join(tail)))
    for fd in fds.values():
        os.close(fd)
    return 1 if bad else 0


if __name__ == "__main__":
    rc = 0
    for p in sys.argv[1:]:
        rc |= main(p)
    sys.exit(rc)
