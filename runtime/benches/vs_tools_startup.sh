#!/bin/bash
# vs_tools_startup.sh — start-up wall time and peak RSS of `sluice record` against Debian's real
# libbpf-tools on the same objects (issue 18): each tool is started, waited for until it prints
# its header (it has loaded and attached by then), sent SIGINT and waited for; sluice runs
# `record -e OBJ [its --prog/--set] -- true` (load, attach, run a workload that exits at once,
# tear down). Both times therefore hold start-up and teardown. Peak RSS is the child's own
# ru_maxrss (wait4). Medians of RUNS (default 10), one line per tool.
#
# Usage: runtime/benches/vs_tools_startup.sh SLUICE_BINARY REAL_OBJS_DIR
#        (REAL_OBJS_DIR from tests/real/fetch.sh; the tools from apt-get install libbpf-tools)
set -euo pipefail
sluice=${1:?sluice binary}; objs=${2:?real objects dir}
RUNS=${RUNS:-10} python3 - "$sluice" "$objs" <<'PY'
import os, signal, subprocess, sys, time, statistics
sluice, objs = sys.argv[1], sys.argv[2]
runs = int(os.environ["RUNS"])
# tool, object, sluice's configuration for the same programs
rows = [
    ("execsnoop", "execsnoop.bpf.o", []),
    ("opensnoop", "opensnoop.bpf.o", []),
    ("sigsnoop", "sigsnoop.bpf.o", ["--prog", "sig_trace"]),
    ("mountsnoop", "mountsnoop.bpf.o", []),
]
def real(tool):
    t0 = time.monotonic()
    p = subprocess.Popen(["/usr/sbin/" + tool], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdout.readline()
    p.send_signal(signal.SIGINT)
    _, status, ru = os.wait4(p.pid, 0)
    p.stdout.close()
    return time.monotonic() - t0, ru.ru_maxrss
def ours(obj, conf):
    t0 = time.monotonic()
    p = subprocess.Popen([sluice, "record", "-e", os.path.join(objs, obj), *conf, "--", "true"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"sluice record -e {obj} failed: status {status}")
    return time.monotonic() - t0, ru.ru_maxrss
print(f"{'tool':<11} {'real s':>8} {'sluice s':>9} {'ratio':>6} {'real RSS kB':>12} {'sluice RSS kB':>14} {'ratio':>6}")
for tool, obj, conf in rows:
    r = [real(tool) for _ in range(runs)]
    s = [ours(obj, conf) for _ in range(runs)]
    rt, st = statistics.median(x[0] for x in r), statistics.median(x[0] for x in s)
    rm, sm = statistics.median(x[1] for x in r), statistics.median(x[1] for x in s)
    print(f"{tool:<11} {rt:8.3f} {st:9.3f} {st/rt:6.2f} {rm:12.0f} {sm:14.0f} {sm/rm:6.2f}")
PY
