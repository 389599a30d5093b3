#!/usr/bin/env bash
# sluice's perf-ring drain against the `ringbuf` peer (shared/peers/ringbuf), on the same
# workload: the peer's generator (gen.c) makes N getppid syscalls pinned to CPU 0, a
# tracepoint program sends a 32-byte record per call through bpf_perf_event_output, and
# a consumer pinned to CPU 1 drains the per-CPU perf rings.
#
#   runtime/benches/vs_ringbuf.sh            (root; env: N=2000000 REPS=3 PEERS=dir
#                                             ROWS="row ..." to run only those rows)
#
# Rows (ROWS names), each run REPS times, interleaved so that all see the same machine load:
#   perfbuf    libbpf-perfbuf perfbuf-64p          the peer, libbpf perf_buffer default (wake per event)
#   wakeup64   libbpf-perfbuf perfbuf-64p-wakeup64 the peer, wakeup_events = 64 (PERF_SAMPLE_RAW only)
#   ringbuf    libbpf-ringbuf ringbuf-256KiB       the peer, BPF ring buffer
#   perf       perf-record perf-64p                perf record -m 64 of the tracepoint (no BPF)
#   default    sluice-runtime DEFAULT              runtime/benches/ring_drain.rs: Session::run with a
#                                                  counting sink, RingConfig::for_cpus (sluice record's rings)
#   raw        sluice-runtime RAW                  the same, OutputLayout::Raw (PERF_SAMPLE_RAW only,
#                                                  as libbpf's perf_buffer samples)
#   64p        sluice-runtime 64p-...              the default layout with the peers' 64-page ring
#   text json  sluice-cli text|json                `sluice record -e bench_drain.o`: the drain plus
#                                                  formatting every sample, text -o /dev/null,
#                                                  --json -o FILE
#   rawtext rawjson  sluice-cli raw-text|raw-json  the same with --raw-output
#   rb         sluice-runtime ringbuf-256KiB       ring_drain.rs on tests/bpf/bench_ringbuf.o: the same
#                                                  record through a 256 KiB BPF ring buffer, the twin of
#                                                  the peer's libbpf ring_buffer row
#   rbcli      sluice-cli rb-decoded|rb-raw|rb-json  `sluice record -e bench_ringbuf.o -o /dev/null`:
#                                                  records decoded by BTF (text), `--decode rb=raw`
#                                                  (hex), decoded as JSON: the decode+print cost
#   sweep      sluice-cli text-mPAGES|json-mPAGES  text and JSON with -m PAGES for each of
#                                                  PAGES_SWEEP (default "256 512 1024"): lost
#                                                  records by ring size (not in the default ROWS)
#   flat       sluice-runtime FLAT-SIZExRINGS      ring_drain.rs on bench_flat.bpf.c (built here):
#                                                  SIZE-byte records (32, 4096) over RINGS perf event
#                                                  arrays (1, 8) in turn, each a ring per CPU: the
#                                                  flat-cost goals (4 KiB <= 1.5x, 8 rings <= 1.2x
#                                                  the CPU per event of 32 bytes on 1 ring);
#              libbpf-perfbuf FLAT-SIZEx1          and the peer's drain (libbpf perf_buffer, 256
#                                                  pages, wakeup_events 64) on its own program
#                                                  changed to send SIZE-byte records (peer/flat.bpf.c,
#                                                  written here): how flat libbpf's cost is
# Figures: events sent (BPF hits) / received / lost, events/s (received / wall), consumer
# CPU (user+sys) per received event. Medians by events/s; ratios are sluice-runtime DEFAULT
# against each peer. At the end, the rows of issue 17's table (lost: the median run's and
# the worst run's). Raw runs go to $OUT/results.log. There is no idle-machine gate: the
# load average is printed before each repetition; compare rows of one run only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
N=${N:-2000000}
REPS=${REPS:-3}
GEN_CPU=0
CONS_CPU=1
ROWS=${ROWS:-perfbuf wakeup64 ringbuf perf default raw 64p text json rawtext rawjson rb rbcli flat}
PAGES_SWEEP=${PAGES_SWEEP:-256 512 1024}
PEERS=${PEERS:-$repo/../shared/peers/ringbuf}
# A worktree one level further down.
[[ -d $PEERS ]] || [[ ! -d $repo/../../shared/peers/ringbuf ]] || PEERS=$repo/../../shared/peers/ringbuf
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
# The peer's program, sending FLAT_SIZE bytes built in a per-CPU value (4 KiB do not fit
# the stack), for the flat rows; its drain attaches the program named tp_perf.
cat >"$OUT/peer/flat.bpf.c" <<'EOF'
#define tp_perf tp_perf_32
#include "drain.bpf.c"
#undef tp_perf

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __uint(value_size, 4096);
} flat SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_getppid")
int tp_perf(void *ctx) {
    __u32 k = 0;
    struct rec *r = bpf_map_lookup_elem(&flat, &k);
    if (!r || !prep(r))
        return 0;
    account(bpf_perf_event_output(ctx, &pb, BPF_F_CURRENT_CPU, r, FLAT_SIZE));
    return 0;
}
EOF
for size in 32 4096; do
    clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -DFLAT_SIZE=$size \
        -I/usr/include/x86_64-linux-gnu -c "$OUT/peer/flat.bpf.c" -o "$P/flat$size.bpf.o"
done

# Ours: the fixture (as tests/bpf/build.sh builds it), the bench consumer and the CLI.
(cd "$repo/tests/bpf" && clang -O2 -g -target bpfel -nostdinc -fdebug-compilation-dir=. \
    -Wall -Werror -Wno-unused-function -c bench_drain.c -o "$OUT/bench_drain.o")
cmp -s "$OUT/bench_drain.o" "$repo/tests/bpf/bench_drain.o" ||
    echo "note: bench_drain.o differs from the committed fixture (another clang?)" >&2
(cd "$repo/tests/bpf" && clang -O2 -g -target bpfel -nostdinc -fdebug-compilation-dir=. \
    -Wall -Werror -Wno-unused-function -c bench_ringbuf.c -o "$OUT/bench_ringbuf.o")
(cd "$repo/tests/bpf" && clang -O2 -g -target bpfel -nostdinc -I. -fdebug-compilation-dir=. \
    -Wall -Werror -Wno-unused-function -c ../../runtime/benches/bench_flat.bpf.c \
    -o "$OUT/bench_flat.o")
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

peer_flat() {  # $1 size: the peer's drain on its program sending $1-byte records
    taskset -c "$CONS_CPU" timeout 120 "$P/drain" "$P/flat$1.bpf.o" perfraw "$N" 256 64 \
        "$GEN_CPU" "$P/gen" 2>"$P/tmp/err" | sed "s/^\(RESULT [^ ]*\) [^ ]*/\1 FLAT-$1x1/"
    cat "$P/tmp/err" >>"$LOG"
}

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

want() { [[ " $ROWS " == *" $1 "* ]]; }

ours() {  # LABEL|- OBJ [KNOBS...]: ring_drain.rs; LABEL replaces the config column
    local label=$1 obj=$2
    shift 2
    taskset -c "$CONS_CPU" timeout 120 "$drain_bin" "$obj" "$N" "$GEN_CPU" \
        "$P/gen" "$@" 2>"$P/tmp/err" |
        if [[ $label == - ]]; then cat; else sed "s/^\(RESULT [^ ]*\) [^ ]*/\1 $label/"; fi
    cat "$P/tmp/err" >>"$LOG"
}

cli() {  # $1 text|json|raw-text|raw-json|rb-decoded|rb-raw|rb-json, [-mPAGES]
    local opts=() obj=$OUT/bench_drain.o out=/dev/null
    [[ $1 != *-m* ]] || opts=(-m "${1##*-m}")
    case ${1%-m*} in
    json) opts+=(--json) out=$P/tmp/out.json ;;
    raw-text) opts+=(--raw-output) ;;
    raw-json) opts+=(--raw-output --json) out=$P/tmp/out.json ;;
    rb-decoded) obj=$OUT/bench_ringbuf.o ;;
    rb-raw) obj=$OUT/bench_ringbuf.o opts+=(--decode rb=raw) ;;
    rb-json) obj=$OUT/bench_ringbuf.o opts+=(--json) ;;
    esac
    rm -f "$P/tmp/out.json"
    /usr/bin/time -f '%e %U %S' -o "$P/tmp/time.out" \
        taskset -c "$CONS_CPU" timeout 120 "$SLUICE" record "${opts[@]}" -e "$obj" \
        -o "$out" -- taskset -c "$GEN_CPU" "$P/gen" "$N" 2>"$P/tmp/cli.err"
    cat "$P/tmp/cli.err" "$P/tmp/time.out" >>"$LOG"
    rm -f "$P/tmp/out.json"
    local gcpu wall user sys samples lost
    gcpu=$(awk '/^GEN /{split($4,a,"=");print a[2]}' "$P/tmp/cli.err")
    read -r wall user sys <"$P/tmp/time.out"
    samples=$(sed -n 's/^sluice record: \([0-9]*\) samples.*/\1/p' "$P/tmp/cli.err")
    lost=$(sed -n 's/.*; [lL][oO][sS][tT] \([0-9]*\) (.*/\1/p' "$P/tmp/cli.err")
    # wall includes loading and attaching (a few ms): the CLI offers no inner clock.
    # Lost: what the CLI counted, or the events it never received when more: a record the
    # program could not reserve in a full BPF ring buffer is counted by no one.
    awk -v c="$1" -v n="$N" -v s="$samples" -v l="$lost" -v u="$user" -v y="$sys" -v g="$gcpu" -v w="$wall" \
        'BEGIN{if (n-s > l) l = n-s; printf "RESULT sluice-cli %s %d %d %d %.3f %.3f %.0f\n", c, n, s, l, u+y-g, w, s/w}'
}

for ((rep = 1; rep <= REPS; rep++)); do
    echo "# rep $rep loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >>"$LOG"
    {
        want perfbuf && peer perf 64 1
        want wakeup64 && peer perfraw 64 64
        want ringbuf && peer ring 64 1
        want perf && perf_record
        want default && ours DEFAULT "$OUT/bench_drain.o"
        want raw && ours RAW "$OUT/bench_drain.o" raw
        want 64p && ours - "$OUT/bench_drain.o" 64
        want text && cli text
        want json && cli json
        want rawtext && cli raw-text
        want rawjson && cli raw-json
        want rb && ours - "$OUT/bench_ringbuf.o"
        if want rbcli; then cli rb-decoded; cli rb-raw; cli rb-json; fi
        if want sweep; then
            for m in $PAGES_SWEEP; do cli "text-m$m"; cli "json-m$m"; done
        fi
        if want flat; then
            peer_flat 32
            peer_flat 4096
            for sr in 32x1 4096x1 32x8 4096x8; do
                ours "FLAT-$sr" "$OUT/bench_flat.o" "size=${sr%x*}" "rings=${sr#*x}"
            done
        fi
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
echo
echo "issue 17's table (median by events/s of $REPS runs; lost: that run's, worst of all runs)"
echo "| system | events/s | lost | consumer CPU µs/event |"
echo "|---|---|---|---|"
awk 'FNR==NR{if(/^RESULT/){k=$2" "$3; if($6>worst[k]) worst[k]=$6}; next}
{k=$1" "$2; r[k]=$8; c[k]=$9; l[k]=$5}
END{n=split("libbpf-perfbuf perfbuf-64p-wakeup64|libbpf perf_buffer, wakeup 64;sluice-runtime DEFAULT|sluice-runtime default;sluice-runtime RAW|sluice-runtime raw;sluice-cli text|sluice text → /dev/null;sluice-cli json|sluice `--json` → file;sluice-cli raw-text|sluice `--raw-output` text → /dev/null;sluice-cli raw-json|sluice `--raw-output --json` → file;libbpf-ringbuf ringbuf-256KiB|libbpf ring_buffer;sluice-runtime ringbuf-256KiB|sluice-runtime BPF ring buffer", rows, ";")
  for(i=1;i<=n;i++){split(rows[i], kv, "|"); k=kv[1]; if(!(k in r)) continue;
    printf "| %s | %.3f M | %d (worst %d) | %.3f |\n", kv[2], r[k]/1e6, l[k], worst[k]+0, c[k]}}' "$RES" "$OUT/medians"
if want flat; then
    echo "flat cost (sluice-runtime, default layout; CPU per event over FLAT-32x1's):"
    awk '{k=$1" "$2; c[k]=$9; l[k]=$5}
    END{b=c["sluice-runtime FLAT-32x1"]; split("4096x1 1.5;32x8 1.2;4096x8 -", g, ";")
      for(i=1;i<=3;i++){split(g[i], x, " "); k="sluice-runtime FLAT-"x[1];
        printf "  %-8s %.3f us/event  x%.2f of 32x1 %.3f%s  (lost %s)\n", x[1], c[k],
          (b>0 ? c[k]/b : 0), b, (x[2]=="-" ? "" : "  goal <= x"x[2]), l[k]}
      p=c["libbpf-perfbuf FLAT-32x1"]; q=c["libbpf-perfbuf FLAT-4096x1"]
      printf "  libbpf perf_buffer (256 pages, wakeup 64): 4096x1 %.3f us/event  x%.2f of its 32x1 %.3f  (lost %s, %s)\n",
        q, (p>0 ? q/p : 0), p, l["libbpf-perfbuf FLAT-4096x1"], l["libbpf-perfbuf FLAT-32x1"]}' "$OUT/medians"
fi
