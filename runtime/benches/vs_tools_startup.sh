#!/bin/bash
# vs_tools_startup.sh — start-up wall time and peak RSS of `sluice record` against Debian's real
# libbpf-tools on the same objects (issue 18).
#
# Each side runs under `/usr/bin/time -f %M` (peak RSS of the measured process itself, in kB:
# GNU time is a small C program, so the pages its child shares before exec are few; a Python
# parent's fork would put the interpreter's ~10 MB into the child's ru_maxrss).
# - the real tool (`stdbuf -oL`: its header is buffered on a pipe otherwise): ready = its
#   header line (it prints it once loaded and attached); then SIGINT, total = its exit.
# - `sluice record -e OBJ [--prog/--set] -- sh -c 'echo sluice-ready'`: ready = the workload's
#   line (the workload is let go once everything is loaded and attached); total = its exit
#   (the workload done, drained, torn down).
# Medians of RUNS (default 10), one line per tool.
#
# Usage: runtime/benches/vs_tools_startup.sh SLUICE_BINARY REAL_OBJS_DIR [TOOL...]
#        (REAL_OBJS_DIR from tests/real/fetch.sh; the tools from apt-get install libbpf-tools)
set -euo pipefail
sluice=${1:?sluice binary}; objs=${2:?real objects dir}; shift 2
[ -x /usr/bin/time ] || { echo "vs_tools_startup: needs GNU time (/usr/bin/time, Debian: time)" >&2; exit 2; }
progs=tracepoint__syscalls__sys_enter_openat,tracepoint__syscalls__sys_exit_openat
[ -e /sys/kernel/debug/tracing/events/syscalls/sys_enter_open ] &&
    progs=$progs,tracepoint__syscalls__sys_enter_open,tracepoint__syscalls__sys_exit_open
OPENSNOOP_PROGS=$progs RUNS=${RUNS:-10} python3 - "$sluice" "$objs" "$@" <<'PY'
import os, signal, subprocess, sys, tempfile, time, statistics
sluice, objs, only = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = int(os.environ["RUNS"])
# tool, object, sluice's configuration for the same programs
rows = [
    ("execsnoop", "execsnoop.bpf.o", []),
    # targ_uid: the real tool's INVALID_UID default. The tool attaches the open() pair only
    # where /sys/kernel/debug/tracing/events/syscalls/sys_enter_open exists (its
    # tracepoint_exists looks there, not in /sys/kernel/tracing), so with debugfs
    # unmounted it attaches openat() alone: OPENSNOOP_PROGS follows the host.
    ("opensnoop", "opensnoop.bpf.o", ["--set", "targ_uid=4294967295", "--prog", os.environ["OPENSNOOP_PROGS"]]),
    ("sigsnoop", "sigsnoop.bpf.o", ["--prog", "sig_trace"]),
    ("mountsnoop", "mountsnoop.bpf.o", []),
]
def timed(argv, marker, stop):
    """Runs argv under GNU time; (seconds to the line starting with marker, total seconds, peak kB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as f:
        t0 = time.monotonic()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", f.name, *argv],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        ready = None
        for line in p.stdout:
            if line.startswith(marker):
                ready = time.monotonic() - t0
                if stop:  # GNU time ignores SIGINT while it waits: the tool gets it
                    os.killpg(p.pid, signal.SIGINT)
                break
        p.stdout.read()
        status = p.wait()
        total = time.monotonic() - t0
        if status not in ((0, 130) if stop else (0,)) or ready is None:  # 130: ended by SIGINT
            sys.exit(f"{argv}: exit status {status}, ready line {'seen' if ready else 'not seen'}")
        return ready, total, int(f.read().split()[-1])
def real(tool):
    return timed(["stdbuf", "-oL", "/usr/sbin/" + tool], b"", True)
def ours(obj, conf):
    return timed([sluice, "record", "-e", os.path.join(objs, obj), *conf, "--", "sh", "-c", "echo sluice-ready"],
                 b"sluice-ready", False)
med = lambda xs, i: statistics.median(x[i] for x in xs)
print(f"{'tool':<11} {'ready s':>8} {'(sluice)':>8} {'total s':>8} {'(sluice)':>8} {'RSS kB':>7} {'(sluice)':>8} {'RSS ratio':>9}")
for tool, obj, conf in rows:
    if only and tool not in only:
        continue
    r = [real(tool) for _ in range(runs)]
    s = [ours(obj, conf) for _ in range(runs)]
    print(f"{tool:<11} {med(r,0):8.3f} {med(s,0):8.3f} {med(r,1):8.3f} {med(s,1):8.3f} {med(r,2):7.0f} {med(s,2):8.0f} {med(s,2)/med(r,2):9.2f}")
PY
