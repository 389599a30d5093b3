#!/usr/bin/env python3
"""Load raw eBPF programs into the running kernel and keep the verifier's listing.

Oracle for `core/tests/disasm_kernel_golden.rs`. Needs root (or CAP_BPF + CAP_PERFMON).

    python3 tests/golden/disasm/kernel_log.py            # rewrite every *.log from its *.hex
    python3 tests/golden/disasm/kernel_log.py scan       # which opcodes the kernel accepts

Each `NAME.hex` holds one instruction per line as 16 hex digits (the 8 bytes of
`struct bpf_insn`, little-endian), `#` comments, and header lines
`# type: socket_filter|kprobe`. The program is loaded with log_level 2; every line of the
form `N: (xx) ...` (or `N: BUG_...`) is kept once per N (the verifier prints an instruction
again on every path it walks), the register-state annotation after `;` is dropped, and the
lines are written sorted by N to `NAME.log` with a header naming the kernel release.
"""
import ctypes, os, re, struct, sys, glob

NR_BPF = {"x86_64": 321, "aarch64": 280, "i686": 357}[os.uname().machine]
BPF_PROG_LOAD = 5
PROG_TYPES = {"socket_filter": 1, "kprobe": 2}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def load(insns: bytes, prog_type: int, log_level: int = 2):
    log = ctypes.create_string_buffer(1 << 24)
    lic = ctypes.create_string_buffer(b"GPL")
    code = ctypes.create_string_buffer(insns, len(insns))
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("<IIQQIIQ", attr, 0, prog_type, len(insns) // 8,
                     ctypes.addressof(code), ctypes.addressof(lic),
                     log_level, len(log), ctypes.addressof(log))
    fd = libc.syscall(NR_BPF, BPF_PROG_LOAD, attr, 128)
    err = ctypes.get_errno()
    if fd >= 0:
        os.close(fd)
    return fd >= 0, err, log.value.decode(errors="replace")


# `N: (xx) text   ; state` as do_check prints while it walks the program, and
# `   N: 0.2....... (xx) text` as the liveness pass ("Live regs before insn:") prints
# every instruction once, reachable or not (kernel 6.15+).
WALK = re.compile(r"^(\d+): (\([0-9a-f]{2}\) [^;]*|BUG_[^;]*)")
LIVE = re.compile(r"^ +(\d+): [0-9.]{10} (\([0-9a-f]{2}\) .*|BUG_.*)$")


def listing(log: str):
    seen = {}
    for line in log.splitlines():
        m = WALK.match(line) or LIVE.match(line)
        if not m:
            continue
        n, text = int(m.group(1)), m.group(2).rstrip()
        if seen.setdefault(n, text) != text:
            raise SystemExit(f"insn {n} printed two ways: {seen[n]!r} / {text!r}")
    return [f"{n}: {seen[n]}" for n in sorted(seen)]


def read_hex(path):
    ptype, raw = "socket_filter", b""
    for line in open(path):
        line = line.strip()
        if line.startswith("# type:"):
            ptype = line.split(":", 1)[1].strip()
        line = line.split("#", 1)[0].strip()
        if line:
            raw += bytes.fromhex(line)
    return PROG_TYPES[ptype], raw


def capture(path):
    ptype, raw = read_hex(path)
    ok, err, log = load(raw, ptype)
    lines = listing(log)
    out = path[:-4] + ".log"
    with open(out, "w") as f:
        f.write(f"# kernel {os.uname().release}, verifier log_level 2, "
                f"load {'accepted' if ok else 'rejected (errno %d)' % err}\n")
        for l in lines:
            f.write(l + "\n")
    n = len(raw) // 8
    print(f"{os.path.basename(path)}: {n} insns, {len(lines)} lines, "
          f"{'ok' if ok else 'REJECTED: ' + log.strip().splitlines()[-1] if log.strip() else 'errno %d' % err}")


def scan(out):
    """Which opcodes get past the kernel's opcode check, and how the verifier prints
    each with all other fields zero. Program: `r0 = 0; if r0 != 0x0 goto pc+N; INSN;
    r0 = 0; exit`, so that the code after INSN is reachable even when INSN is `exit`."""
    tail = bytes.fromhex("b700000000000000" "9500000000000000")
    with open(out, "w") as f:
        f.write(f"# kernel {os.uname().release}: opcode, then `unknown` (\"unknown opcode\"),\n"
                f"# `reserved` (\"BPF_LDX uses reserved fields\") or how insn 0 is printed\n")
        for code in range(256):
            ins = bytes([code, 0, 0, 0, 0, 0, 0, 0])
            if code == 0x18:
                ins += bytes(8)
            head = bytes.fromhex("b700000000000000") + bytes([0x55, 0, len(ins) // 8, 0, 0, 0, 0, 0])
            ok, err, log = load(head + ins + tail, 1)
            lines = [l for l in listing(log) if l.startswith("2: ")]
            if "unknown opcode" in log:
                what = "unknown"
            elif "BPF_LDX uses reserved fields" in log:
                what = "reserved"
            elif lines:
                what = lines[0][3:]
            else:
                raise SystemExit(f"{code:02x}: unexpected log {log!r}")
            f.write(f"{code:02x} {what}\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:] == ["scan"]:
        scan(os.path.join(here, "opcodes.txt"))
    else:
        for p in sorted(glob.glob(os.path.join(here, "*.hex"))):
            capture(p)
