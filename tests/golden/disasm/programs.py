#!/usr/bin/env python3
"""Writes the hand-encoded golden programs (*.hex) of this folder; kernel_log.py then
loads them and records the verifier listings (*.log). Kfunc BTF ids are read from this
kernel (bpftool), so kfunc.hex is kernel-build specific and records id -> name."""
import struct, os
OUT = os.path.dirname(os.path.abspath(__file__))
def I(code, dst=0, src=0, off=0, imm=0, c=""):
    return (struct.pack("<BBhi", code, (dst & 15) | ((src & 15) << 4), off, imm), c)
ALU, ALU64, JMP, JMP32, LD, LDX, ST, STX = 4, 7, 5, 6, 0, 1, 2, 3
K, X = 0, 8
OPS = dict(add=0x00, sub=0x10, mul=0x20, div=0x30, or_=0x40, and_=0x50, lsh=0x60, rsh=0x70, mod=0x90, xor=0xa0, mov=0xb0, arsh=0xc0)
JOPS = dict(jeq=0x10, jgt=0x20, jge=0x30, jset=0x40, jne=0x50, jsgt=0x60, jsge=0x70, jlt=0xa0, jle=0xb0, jslt=0xc0, jsle=0xd0)
W, H, B, DW = 0, 8, 0x10, 0x18
MEM, MEMSX, ATOMIC, ABS, IND = 0x60, 0x80, 0xc0, 0x20, 0x40
def ldimm(dst, v, src=0, c=""):
    v &= (1 << 64) - 1
    return [I(0x18, dst, src, 0, struct.unpack("<i", struct.pack("<I", v & 0xffffffff))[0], c),
            I(0, 0, 0, 0, struct.unpack("<i", struct.pack("<I", v >> 32))[0], "  second slot")]
EXIT = [I(0xb7, 0, 0, 0, 0, "mov64_imm r0 0"), I(0x95, c="exit")]
def write(name, ptype, desc, insns):
    with open(os.path.join(OUT, name + ".hex"), "w") as f:
        f.write(f"# {desc}\n# type: {ptype}\n")
        for n, (b, c) in enumerate(insns):
            f.write(f"{b.hex()}  # {n}: {c}\n")

def alu(cls, r):
    p = [I(cls | 0xb0 | K, 1, 0, 0, 5, f"mov {r}1 5"), I(cls | 0xb0 | K, 2, 0, 0, -3, f"mov {r}2 -3"),
         I(cls | 0xb0 | X, 3, 1, 0, 0, f"mov {r}3 {r}1")]
    for name, op in OPS.items():
        if name == "mov":
            continue
        imm = 3 if name in ("lsh", "rsh", "arsh") else (7 if name in ("div", "mod") else -100)
        p.append(I(cls | op | K, 3, 0, 0, imm, f"{name} {r}3 imm {imm}"))
        p.append(I(cls | op | X, 3, 1, 0, 0, f"{name} {r}3 {r}1"))
    p += [I(cls | 0x80, 3, c=f"neg {r}3"),
          I(cls | 0x30 | K, 3, 0, 1, -7, "sdiv imm"), I(cls | 0x30 | X, 3, 2, 1, 0, "sdiv reg"),
          I(cls | 0x90 | K, 3, 0, 1, 5, "smod imm"), I(cls | 0x90 | X, 3, 2, 1, 0, "smod reg"),
          I(cls | 0xb0 | X, 4, 2, 8, 0, "movsx 8"), I(cls | 0xb0 | X, 5, 2, 16, 0, "movsx 16")]
    if cls == ALU64:
        p += [I(cls | 0xb0 | X, 6, 2, 32, 0, "movsx 32"),
              I(0xd7, 3, 0, 0, 16, "bswap16"), I(0xd7, 3, 0, 0, 32, "bswap32"), I(0xd7, 3, 0, 0, 64, "bswap64"),
              I(0xd4, 4, 0, 0, 16, "to_le 16"), I(0xd4, 4, 0, 0, 32, "to_le 32"), I(0xd4, 4, 0, 0, 64, "to_le 64"),
              I(0xdc, 5, 0, 0, 16, "to_be 16"), I(0xdc, 5, 0, 0, 32, "to_be 32"), I(0xdc, 5, 0, 0, 64, "to_be 64"),
              I(cls | 0xb0 | K, 7, 0, 0, 2147483647, "mov max"), I(cls | 0xb0 | K, 8, 0, 0, -2147483648, "mov min"),
              I(cls | 0 | K, 10 if False else 9, 0, 0, 0, "add r9 0?")]
        p[-1] = I(cls | 0xb0 | X, 9, 10, 0, 0, "mov r9 r10")
        p += [I(cls | 0x00 | K, 9, 0, 0, -8, "add r9 -8")]
    p += [I(cls | 0xb0 | X, 0, 3, 0, 0, f"mov {r}0 {r}3"), I(0x95, c="exit")]
    return p
write("alu64", "socket_filter", "every ALU64 operation, immediate and register, cpu v4 forms, byte swaps", alu(ALU64, "r"))
write("alu32", "socket_filter", "every ALU (32-bit) operation, immediate and register, cpu v4 forms", alu(ALU, "w"))

mem = [I(0xbf, 6, 1, 0, 0, "mov64 r6 r1 (ctx)"), I(0xb7, 1, 0, 0, -77, "r1 = -77")]
for sz, nm, o in ((B, "u8", -1), (H, "u16", -4), (W, "u32", -8), (DW, "u64", -16)):
    mem.append(I(ST | MEM | sz, 10, 0, o, -2, f"st {nm} [r10{o}] = -2"))
for sz, nm, o in ((B, "u8", -17), (H, "u16", -20), (W, "u32", -24), (DW, "u64", -32)):
    mem.append(I(STX | MEM | sz, 10, 6 if sz == DW else 1, o, 0, f"stx {nm} [r10{o}]"))
mem += [I(0xb7, 2, 0, 0, 0x1234, "mov64 r2"), I(STX | MEM | DW, 10, 2, -40, 0, "stx u64 r2")]
for sz, nm, o in ((B, "u8", -1), (H, "u16", -4), (W, "u32", -8), (DW, "u64", -16)):
    mem.append(I(LDX | MEM | sz, 3, 10, o, 0, f"ldx {nm} r3 [r10{o}]"))
for sz, nm, o in ((B, "s8", -1), (H, "s16", -4), (W, "s32", -8)):
    mem.append(I(LDX | MEMSX | sz, 4, 10, o, 0, f"ldxsx {nm} r4 [r10{o}]"))
mem += [I(LDX | MEM | DW, 7, 10, -32, 0, "reload ctx ptr from stack"),
        I(LDX | MEM | W, 5, 6, 0, 0, "skb->len"), I(LDX | MEM | W, 5, 6, 16, 0, "skb->protocol"),
        I(LDX | MEM | H, 5, 6, 0, 0, "narrow skb->len"), I(LDX | MEM | B, 5, 6, 0, 0, "narrow skb->len")]
mem += EXIT
write("mem", "socket_filter", "ST/STX/LDX of every size, sign-extending loads, context reads", mem)

at = [I(0xb7, 1, 0, 0, 1, "r1 = 1"), I(0xb7, 0, 0, 0, 0, "r0 = 0"),
      I(STX | MEM | DW, 10, 1, -8, 0, "init [r10-8]"), I(STX | MEM | DW, 10, 1, -16, 0, "init [r10-16]")]
for sz, o in ((W, -8), (DW, -16)):
    for nm, imm in (("add", 0), ("or", 0x40), ("and", 0x50), ("xor", 0xa0)):
        at.append(I(STX | ATOMIC | sz, 10, 1, o, imm, f"lock {nm}"))
        at.append(I(STX | ATOMIC | sz, 10, 1, o, imm | 1, f"fetch {nm}"))
    at.append(I(STX | ATOMIC | sz, 10, 2 if False else 1, o, 0xe1, "xchg"))
    at.append(I(STX | ATOMIC | sz, 10, 1, o, 0xf1, "cmpxchg"))
for sz in (B, H, W, DW):
    at.append(I(STX | ATOMIC | sz, 3, 10, -16, 0x100, "load_acquire"))
for sz in (B, H, W, DW):
    at.append(I(STX | ATOMIC | sz, 10, 1, -16, 0x110, "store_release"))
at += EXIT
write("atomic", "socket_filter", "atomic operations on the stack: lock, fetch, xchg, cmpxchg, load-acquire, store-release", at)

j = [I(0x85, 0, 0, 0, 7, "call get_prandom_u32"), I(0xb7, 1, 0, 0, 100, "r1 = 100"), I(0xb7, 2, 0, 0, 50, "r2 = 50"),
     I(0xb7, 0, 0, 0, 0, "r0 = 0")]
for cls, r in ((JMP, "r"), (JMP32, "w")):
    for nm, op in JOPS.items():
        j.append(I(cls | op | K, 1, 0, 1, -5 if nm in ("jsgt", "jslt") else 0x7f, f"if {r}1 {nm} imm skip 1"))
        j.append(I(0xb7, 0, 0, 0, 1, "r0 = 1"))
        j.append(I(cls | op | X, 1, 2, 1, 0, f"if {r}1 {nm} {r}2 skip 1"))
        j.append(I(0x07, 0, 0, 0, 1, "r0 += 1"))
j += [I(0x15, 1, 0, 1, 7, "if r1 == 7 goto +1"), I(0x05, 0, 0, 1, 0, "goto +1"), I(0xb7, 0, 0, 0, 2, "r0 = 2"),
      I(0x15, 1, 0, 1, 8, "if r1 == 8 goto +1"), I(0x06, 0, 0, 0, 1, "gotol +1"), I(0xb7, 0, 0, 0, 3, "r0 = 3"),
      I(0xb7, 3, 0, 0, 0, "r3 = 0 (loop)"), I(0x07, 3, 0, 0, 1, "r3 += 1"), I(0xa5, 3, 0, -2, 4, "if r3 < 4 goto -2"),
      I(0xe5, 0, 0, 2, 0, "may_goto +2"), I(0x07, 0, 0, 0, 1, "r0 += 1"), I(0x05, 0, 0, -3, 0, "goto -3 (to may_goto)"),
      I(0x55, 1, 0, 1, 0x12345678, "if r1 != big goto +1"), I(0xb7, 0, 0, 0, -1, "r0 = -1"),
      I(0x95, c="exit")]
write("jmp", "socket_filter", "every conditional jump in JMP and JMP32, immediate and register, goto, gotol, a loop, may_goto", j)

calls = [I(0xbf, 6, 1, 0, 0, "r6 = ctx"), I(0x85, 0, 0, 0, 5, "call ktime_get_ns"), I(0x85, 0, 0, 0, 8, "call smp_processor_id"),
         I(0x85, 0, 0, 0, 7, "call prandom"), I(0x85, 0, 0, 0, 42, "call numa_node_id"),
         I(0xb7, 1, 0, 0, 1, "r1 = 1"), I(0xb7, 2, 0, 0, 2, "r2 = 2"),
         I(0x85, 0, 1, 0, 12 + 0, "call pc+N (subprog 'add')")]
# Fill in the subprog offset later.
calls += ldimm(1, 0x12345678deadbeef, c="ld_imm64 r1") + ldimm(2, -2, c="ld_imm64 r2 -2") + ldimm(3, 0, c="ld_imm64 r3 0") + ldimm(4, 1 << 32, c="ld_imm64 r4 1<<32")
calls += EXIT
sub = len(calls)
calls += [I(0xbf, 0, 1, 0, 0, "subprog add: r0 = r1"), I(0x0f, 0, 2, 0, 0, "r0 += r2"), I(0x95, c="exit")]
# patch offsets: call at index 5 -> sub; ld_imm64 pseudo func at its index -> cb
b, c = calls[7]; calls[7] = I(0x85, 0, 1, 0, sub - 8, c)
write("calls", "socket_filter", "helper calls, a bpf-to-bpf call, ld_imm64 constants", calls)
cbp = [I(0xbf, 6, 1, 0, 0, "r6 = ctx"), I(0xb7, 1, 0, 0, 4, "r1 = 4 iterations")] + ldimm(2, 0, src=4, c="ld_imm64 r2 = callback (pseudo func)")
cbp += [I(0xb7, 3, 0, 0, 0, "r3 = ctx 0"), I(0xb7, 4, 0, 0, 0, "r4 = flags"), I(0x85, 0, 0, 0, 181, "call bpf_loop")] + EXIT
cb = len(cbp)
cbp += [I(0xb7, 0, 0, 0, 0, "callback: r0 = 0"), I(0x95, c="exit")]
cbp[2] = I(0x18, 2, 4, 0, cb - 3, cbp[2][1])
write("callback", "socket_filter", "ld_imm64 of a callback (BPF_PSEUDO_FUNC) for bpf_loop; the verifier rejects it without BTF func_info, after printing the listing", cbp)
import subprocess, re
btf = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "raw"], capture_output=True, text=True).stdout
def kid(name):
    return int(re.search(r"^\[(\d+)\] FUNC '" + name + "'", btf, re.M).group(1))
lock, unlock = kid("bpf_rcu_read_lock"), kid("bpf_rcu_read_unlock")
kf = [I(0x85, 0, 2, 0, lock, "kfunc bpf_rcu_read_lock"), I(0x85, 0, 0, 0, 14, "get_current_pid_tgid"),
      I(0x85, 0, 2, 0, unlock, "kfunc bpf_rcu_read_unlock")] + EXIT
write("kfunc", "socket_filter", f"kfunc calls (BTF ids of this kernel's vmlinux)\n# kfunc: {lock} bpf_rcu_read_lock\n# kfunc: {unlock} bpf_rcu_read_unlock", kf)

ld = [I(0xbf, 6, 1, 0, 0, "r6 = ctx (required by LD_ABS)"),
      I(LD | ABS | B, 0, 0, 0, 12, "ld_abs u8 12"), I(LD | ABS | H, 0, 0, 0, 12, "ld_abs u16 12"), I(LD | ABS | W, 0, 0, 0, 26, "ld_abs u32 26"),
      I(0xb7, 7, 0, 0, 14, "r7 = 14"),
      I(LD | IND | B, 0, 7, 0, 9, "ld_ind u8 r7+9"), I(LD | IND | H, 0, 7, 0, 2, "ld_ind u16"), I(LD | IND | W, 0, 7, 0, -4, "ld_ind u32 r7-4"),
      I(0x95, c="exit")]
write("ld_abs", "socket_filter", "legacy packet loads (BPF_LD | BPF_ABS / BPF_IND)", ld)

kp = [I(0xbf, 6, 1, 0, 0, "r6 = ctx"), I(LDX | MEM | DW, 3, 6, 112, 0, "r3 = regs->di"),
      I(0xbf, 1, 10, 0, 0, "r1 = r10"), I(0x07, 1, 0, 0, -8, "r1 += -8"), I(0xb7, 2, 0, 0, 8, "r2 = 8"),
      I(0x85, 0, 0, 0, 113, "probe_read_kernel"), I(0x55, 0, 0, 5, 0, "if r0 != 0 goto err"),
      I(LDX | MEM | DW, 3, 10, -8, 0, "r3 = [r10-8]"), I(0xbf, 1, 10, 0, 0, "r1 = r10"), I(0x07, 1, 0, 0, -16, "r1 += -16"),
      I(0xb7, 2, 0, 0, 8, "r2 = 8"), I(0x85, 0, 0, 0, 112, "probe_read_user"),
      I(0x85, 0, 0, 0, 35, "get_current_task"), I(0x85, 0, 0, 0, 14, "get_current_pid_tgid"), I(0xbf, 1, 6, 0, 0, "r1 = ctx")] + EXIT
write("kprobe", "kprobe", "a kprobe prologue of the perf kind: pt_regs load, probe_read_kernel/user into the stack", kp)
odd = [I(0xb7, 1, 0, 0, 1, "r1 = 1"), I(0xb7, 2, 0, 0, 2, "r2 = 2"), I(0xb7, 0, 0, 0, 0, "r0 = 0"),
       I(0x7b, 10, 1, -8, 0, "init [r10-8]"),
       I(0xbc, 1, 2, 32, 0, "ALU mov with off 32 (movsx32 s32: reserved)"),
       I(0xbf, 1, 2, 7, 0, "ALU64 mov with off 7 (reserved)"),
       I(0xd4, 1, 0, 0, 0, "END width 0"),
       I(0xbf, 1, 2, 1, 0x10002, "addr_space_cast without arena"),
       I(0xbf, 1, 2, -1, 0, "per-CPU address move (kernel-internal)"),
       I(0xdb, 10, 1, -8, 0x30, "atomic with imm DIV"),
       I(0xc3, 10, 1, -8, 0x2, "atomic with imm 2"),
       I(0xe5, 0, 1, 1, 0, "JCOND with src 1 (not may_goto)"), I(0xb7, 0, 0, 0, 0, "r0 = 0"),
       I(0x3f, 1, 2, 2, 0, "div with off 2"),
       I(0x05, 0, 0, 0, 5, "ja with imm set"),
       I(0x87, 1, 0, 0, 5, "neg with imm set"),
       I(0x85, 0, 3, 0, 5, "call with src 3"),
       I(0x85, 0, 0, 0, 9999, "call of an unknown helper id"),
       I(0x79, 11, 10, -8, 0, "ldx into r11"),
       I(0x7a, 10, 0, -512, 7, "st at the bottom of the stack"),
       I(0x6d, 15, 12, 1, 0, "placeholder"),
       ] + EXIT
# the last jump must stay in range for check_cfg: make it jump forward by 1 instead
odd[-3] = I(0x6d, 15, 12, 1, 0, "jsgt r15 r12 +1")
write("rejected", "socket_filter", "instructions that pass the opcode and CFG checks but that the verifier rejects; it prints the whole listing (liveness pass) first", odd)

# The two programs of the fixture tests/bpf/insns.o (clang -mcpu=v3 plus hand-written words
# LLVM 14 cannot print): neither has relocations, so they load as they are. The Rust test
# checks these files still equal the fixture's sections.
import tempfile
ROOT = os.path.join(OUT, "..", "..", "..")
for sec, ptype, name in (("socket", "socket_filter", "fixture_insns_socket"),
                         ("kprobe/vfs_read", "kprobe", "fixture_insns_kprobe")):
    with tempfile.NamedTemporaryFile() as t:
        subprocess.run(["llvm-objcopy", "-O", "binary", f"--only-section={sec}",
                        os.path.join(ROOT, "tests/bpf/insns.o"), t.name], check=True)
        code = open(t.name, "rb").read()
    with open(os.path.join(OUT, name + ".hex"), "w") as f:
        f.write(f"# tests/bpf/insns.o, section {sec}\n# fixture: tests/bpf/insns.o {sec}\n# type: {ptype}\n")
        for n in range(0, len(code), 8):
            f.write(code[n:n + 8].hex() + f"  # {n // 8}\n")
