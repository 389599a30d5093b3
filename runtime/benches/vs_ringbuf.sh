#!/usr/bin/env bash
# sluice's perf-ring drain against the `ringbuf` peer (shared/peers/ringbuf), on the same
# workload: the peer's generator (gen.c) makes N getppid syscalls pinned to CPU 0, a
# tracepoint program sends a 32-byte record per call through bpf_perf_event_output, and
# a consumer pinned to CPU 1 drains the per-CPU perf rings.
#
#   runtime/benches/vs_ringbuf.sh            (root; env: N=2000000 REPS=3 PEERS=dir)
#
# Consumers, each run REPS times, interleaved so that all see the same machine load:
#   libbpf-perfbuf perfbuf-64p            the peer, libbpf perf_buffer default (wake per event)
#   libbpf-perfbuf perfbuf-64p-wakeup64   the peer, wakeup_events = 64
#   libbpf-ringbuf ringbuf-256KiB         the peer, BPF ring buffer
#   perf-record perf-64p                  perf record -m 64 of the tracepoint (no BPF)
#   sluice-runtime DEFAULT                runtime/benches/ring_drain.rs: Session::run with a
#                                         counting sink, RingConfig::default() -- "sluice drains"
#   sluice-runtime 64p-...                the same with the peers' 64-page ring
#   sluice-cli text|json                  `sluice record -e bench_drain.o -o /dev/null`: the
#                                         drain plus formatting every sample (text / --json)
#   sluice-runtime ringbuf-256KiB         ring_drain.rs on tests/bpf/bench_ringbuf.o: the same
#                                         record through a 256 KiB BPF ring buffer, the twin of
#                                         the peer's libbpf ring_buffer row
#   sluice-cli rb-decoded|rb-raw|rb-json  `sluice record -e bench_ringbuf.o -o /dev/null`:
#                                         records decoded by BTF (text), `--decode rb=raw`
#                                         (hex), decoded as JSON: the decode+print cost
# Figures: events sent (BPF hits) / received / lost, events/s (received / wall), consumer
# CPU (user+sys) per received event. Medians by events/s; ratios are sluice-runtime DEFAULT
# against each peer. Raw runs go to $OUT/results.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
N=${N:-2000000}
REPS=${REPS:-3}
GEN_CPU=0
CONS_CPU=1
PEERS=${PEERS:-$repo/../shared/peers/ringbuf}
OUT=${OUT:-$(mktemp -d /tmp/sluice-vs-ringbuf.XXXXXX)}

[[ $(id -u) == 0 ]] || { echo "vs_ringbuf.sh: needs root (BPF, tracepoints)" >&2; exit 1; }
[[ -d $PEERS ]] || { echo "vs_ringbuf.sh: no peer folder at $PEERS (set PEERS=)" >&2; exit 1; }
need=()
for p in gcc clang libbpf-dev libelf-dev zlib1g-dev linux-perf time; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

# The peer, built in a scratch copy exactly as its run.sh builds it.
cp -r "$PEERS" "$OUT/peer"
chmod -R u+w "$OUT/peer"
P=$OUT/peer/build
mkdir -p "$P/tmp"
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I/usr/include/x86_64-linux-gnu \
    -c "$OUT/peer/drain.bpf.c" -o "$P/drain.bpf.o"
gcc -O2 -Wall -o "$P/drain" "$OUT/peer/drain.c" -lbpf -lelf -lz
gcc -O2 -Wall -o "$P/gen" "$OUT/peer/gen.c"

# Ours: the fixture (as tests/bpf/build.sh builds it), the bench consumer and the CLI.
(cd "$repo/tests/bpf" && clang -O2 -g -target bpfel -nostdinc -fdebug-compilation-dir=. \
    -Wall -Werror -Wno-unused-function -c bench_drain.c -o "$OUT/bench_drain.o")
cmp -s "$OUT/bench_drain.o" "$repo/tests/bpf/bench_drain.o" ||
    echo "note: bench_drain.o differs from the committed fixture (another clang?)" >&2
(cd "$repo/tests/bpf" && clang -O2 -g -target bpfel -nostdinc -fdebug-compilation-dir=. \
    -Wall -Werror -Wno-unused-function -c bench_ringbuf.c -o "$OUT/bench_ringbuf.o")
(cd "$repo" && cargo build -q --release -p sluice)
drain_bin=$(cd "$repo" && cargo bench -q -p sluice-runtime --bench ring_drain --no-run \
    --message-format=json 2>/dev/null | grep -o '"executable":"[^"]*ring_drain[^"]*"' |
    tail -1 | cut -d'"' -f4)
SLUICE=${CARGO_TARGET_DIR:-$repo/target}/release/sluice

LOG=$OUT/results.log
RES=$OUT/results.lines
: >"$LOG"; : >"$RES"
{
    echo "# kernel $(uname -r), $(nproc) cpus, $(clang --version | head -1)"
    echo "# N=$N REPS=$REPS generator on CPU $GEN_CPU, consumer on CPU $CONS_CPU, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$LOG"

peer() {  # $1 mode $2 pages $3 wakeup
    taskset -c "$CONS_CPU" timeout 120 "$P/drain" "$P/drain.bpf.o" "$1" "$N" "$2" "$3" \
        "$GEN_CPU" "$P/gen" 2>"$P/tmp/err"
    cat "$P/tmp/err" >>"$LOG"
}

perf_record() {
    rm -f "$P/tmp/perf.data"
    /usr/bin/time -f '%e %U %S' -o "$P/tmp/time.out" \
        taskset -c "$CONS_CPU" timeout 120 perf record -e syscalls:sys_enter_getppid -m 64 \
        -o "$P/tmp/perf.data" -- taskset -c "$GEN_CPU" "$P/gen" "$N" 2>"$P/tmp/perf.err" >/dev/null
    cat "$P/tmp/perf.err" "$P/tmp/time.out" >>"$LOG"
    local gcpu wall user sys samples lost
    gcpu=$(awk '/^GEN /{split($4,a,"=");print a[2]}' "$P/tmp/perf.err")
    read -r wall user sys <"$P/tmp/time.out"
    lost=$(perf report -i "$P/tmp/perf.data" --stats 2>/dev/null |
        awk '/stats:$/{e=1} e&&/LOST_SAMPLES events:/{l=$3} END{print l+0}')
    # As the peer's run.sh: unique timestamps (perf 6.1 writes some chunks twice).
    samples=$(perf script --ns -i "$P/tmp/perf.data" -F time 2>/dev/null | uniq | wc -l)
    awk -v n="$N" -v s="$samples" -v l="$lost" -v u="$user" -v y="$sys" -v g="$gcpu" -v w="$wall" \
        'BEGIN{printf "RESULT perf-record perf-64p %d %d %d %.3f %.3f %.0f\n", n, s, l, u+y-g, w, s/w}'
}

ours() {  # [PAGES [WAKEUP]]
    taskset -c "$CONS_CPU" timeout 120 "$drain_bin" "$OUT/bench_drain.o" "$N" "$GEN_CPU" \
        "$P/gen" "$@" 2>"$P/tmp/err" | { if (($#)); then cat; else sed 's/^\(RESULT [^ ]*\) [^ ]*/\1 DEFAULT/'; fi; }
    cat "$P/tmp/err" >>"$LOG"
}

ours_rb() {
    taskset -c "$CONS_CPU" timeout 120 "$drain_bin" "$OUT/bench_ringbuf.o" "$N" "$GEN_CPU" \
        "$P/gen" 2>"$P/tmp/err"
    cat "$P/tmp/err" >>"$LOG"
}

cli() {  # $1 text|json|rb-decoded|rb-raw|rb-json
    local json=() obj=$OUT/bench_drain.o
    case $1 in
    json) json=(--json) ;;
    rb-decoded) obj=$OUT/bench_ringbuf.o ;;
    rb-raw) obj=$OUT/bench_ringbuf.o json=(--decode rb=raw) ;;
    rb-json) obj=$OUT/bench_ringbuf.o json=(--json) ;;
    esac
    /usr/bin/time -f '%e %U %S' -o "$P/tmp/time.out" \
        taskset -c "$CONS_CPU" timeout 120 "$SLUICE" record "${json[@]}" -e "$obj" \
        -o /dev/null -- taskset -c "$GEN_CPU" "$P/gen" "$N" 2>"$P/tmp/cli.err"
    cat "$P/tmp/cli.err" "$P/tmp/time.out" >>"$LOG"
    local gcpu wall user sys samples lost
    gcpu=$(awk '/^GEN /{split($4,a,"=");print a[2]}' "$P/tmp/cli.err")
    read -r wall user sys <"$P/tmp/time.out"
    samples=$(sed -n 's/^sluice record: \([0-9]*\) samples.*/\1/p' "$P/tmp/cli.err")
    lost=$(sed -n 's/.*; [lL][oO][sS][tT] \([0-9]*\) (.*/\1/p' "$P/tmp/cli.err")
    # wall includes loading and attaching (a few ms): the CLI offers no inner clock.
    awk -v c="$1" -v n="$N" -v s="$samples" -v l="$lost" -v u="$user" -v y="$sys" -v g="$gcpu" -v w="$wall" \
        'BEGIN{printf "RESULT sluice-cli %s %d %d %d %.3f %.3f %.0f\n", c, n, s, l, u+y-g, w, s/w}'
}

for ((rep = 1; rep <= REPS; rep++)); do
    {
        peer perf 64 1
        peer perfraw 64 64
        peer ring 64 1
        perf_record
        ours
        ours 64
        cli text
        cli json
        ours_rb
        cli rb-decoded
        cli rb-raw
        cli rb-json
    } | tee -a "$LOG" >>"$RES"
done

echo "system config events_sent events_received lost consumer_cpu_s wall_s events_per_s us_per_event"
awk '/^RESULT/{k=$2" "$3; if(!(k in seen)){seen[k]=++nk; key[nk]=k} n[k]++; line[k, n[k]]=$0; rate[k, n[k]]=$9}
END{for(i=1;i<=nk;i++){k=key[i]; m=n[k];
      for(a=1;a<=m;a++) idx[a]=a
      for(a=1;a<=m;a++) for(b=a+1;b<=m;b++) if(rate[k,idx[b]]<rate[k,idx[a]]){t=idx[a];idx[a]=idx[b];idx[b]=t}
      l=line[k, idx[int((m+1)/2)]]; sub(/^RESULT /,"",l); split(l,f," ");
      printf "%s %.3f\n", l, (f[4] > 0 ? f[6] * 1e6 / f[4] : 0)}}' "$RES" | tee "$OUT/medians"
echo
echo "ratios: sluice-runtime DEFAULT vs each (events/s: ours/theirs; CPU per event: theirs/ours; >1 = sluice better)"
awk '{k=$1" "$2; r[k]=$8; c[k]=$9; l[k]=$5; keys[++n]=k}
END{o="sluice-runtime DEFAULT"; for(i=1;i<=n;i++){k=keys[i]; if(k==o) continue;
    printf "  vs %-40s events/s x%.2f  cpu/event x%.2f  (lost: theirs %s, ours %s)\n", k,
        (r[k]>0 ? r[o]/r[k] : 0), (c[o]>0 ? c[k]/c[o] : 0), l[k], l[o]}}' "$OUT/medians"
echo "raw runs: $LOG"
echo "ring buffer: sluice-runtime ringbuf-256KiB vs libbpf-ringbuf ringbuf-256KiB, and the CLI's decode cost"
awk '{k=$1" "$2; r[k]=$8; c[k]=$9; l[k]=$5}
END{o="sluice-runtime ringbuf-256KiB"; p="libbpf-ringbuf ringbuf-256KiB";
    printf "  events/s x%.2f  cpu/event x%.2f  (lost: libbpf %s, sluice %s)\n",
        (r[p]>0 ? r[o]/r[p] : 0), (c[o]>0 ? c[p]/c[o] : 0), l[p], l[o];
    printf "  CLI us/record: decoded text %.3f, raw hex %.3f, decoded JSON %.3f (drain alone %.3f)\n",
        c["sluice-cli rb-decoded"], c["sluice-cli rb-raw"], c["sluice-cli rb-json"], c[o]}' "$OUT/medians"
