#!/usr/bin/env bash
# `sluice record --perf-data` against sluice's own text output and against `perf record`
# writing the same events, on the workload of vs_ringbuf.sh: the `ringbuf` peer's
# generator (gen.c) makes N getppid syscalls pinned to CPU 0; the consumer runs on CPU 1.
#
#   runtime/benches/vs_perf_data.sh          (root; env: N=1000000 REPS=3 PEERS=dir)
#
# Consumers, each run REPS times, interleaved:
#   sluice-cli perf-data   sluice record -e bench_drain.o --perf-data FILE: one bpf-output
#                          sample (32-byte payload) per call, written to a perf.data file
#   sluice-cli text        the same run printing text lines to /dev/null
#   perf-record m256       perf record -e syscalls:sys_enter_getppid -m 256 (the tracepoint's
#                          own sample per call, no BPF; sluice's ring size)
#   perf-record m64        the same with perf's usual 64 pages
# Figures: events sent / received / lost, consumer CPU (user+sys of the recorder, the
# generator's own CPU taken out) per received event. The samples of each perf.data file are
# counted by `perf report --stats` (sluice's file is checked to read back whole). Medians by
# CPU per event; raw runs go to $OUT/results.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
N=${N:-1000000}
REPS=${REPS:-3}
GEN_CPU=0
CONS_CPU=1
PEERS=${PEERS:-$repo/../shared/peers/ringbuf}
OUT=${OUT:-$(mktemp -d /tmp/sluice-vs-perf-data.XXXXXX)}

[[ $(id -u) == 0 ]] || { echo "vs_perf_data.sh: needs root" >&2; exit 1; }
[[ -d $PEERS ]] || { echo "vs_perf_data.sh: no peer folder at $PEERS (set PEERS=)" >&2; exit 1; }
command -v perf >/dev/null || { echo "vs_perf_data.sh: needs perf (linux-perf)" >&2; exit 1; }
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

mkdir -p "$OUT/tmp"
gcc -O2 -Wall -o "$OUT/gen" "$PEERS/gen.c"
(cd "$repo/tests/bpf" && clang -O2 -g -target bpfel -nostdinc -fdebug-compilation-dir=. \
    -Wall -Werror -Wno-unused-function -c bench_drain.c -o "$OUT/bench_drain.o")
(cd "$repo" && cargo build -q --release -p sluice)
SLUICE=$repo/target/release/sluice
LOG=$OUT/results.log
RES=$OUT/results.lines
: >"$LOG"; : >"$RES"
echo "# kernel $(uname -r), $(nproc) cpus, $(perf --version); N=$N REPS=$REPS" | tee -a "$LOG"

# perf.data samples and LOST records, as perf counts them.
stats() {  # $1 file
    perf report -i "$1" --stats 2>/dev/null | awk '
        /stats:$/{e=1} e&&/^ *SAMPLE events:/{s=$3} e&&/^ *LOST events:/{l=$3}
        e&&/LOST_SAMPLES events:/{ls=$3} END{print s+0, l+0, ls+0}'
}

result() {  # name config err-file time-file samples lost
    local gcpu wall user sys
    gcpu=$(awk '/^GEN /{split($4,a,"=");print a[2]}' "$3")
    read -r wall user sys <"$4"
    awk -v k="$1 $2" -v n="$N" -v s="$5" -v l="$6" -v u="$user" -v y="$sys" -v g="$gcpu" -v w="$wall" \
        'BEGIN{printf "RESULT %s %d %d %d %.3f %.3f %.3f\n", k, n, s, l, u+y-g, w, (s>0 ? (u+y-g)*1e9/s : 0)}'
}

sluice_run() {  # $1 perf-data|text
    local out=(-o /dev/null)
    [[ $1 == perf-data ]] && out=(--perf-data "$OUT/tmp/sluice.data")
    /usr/bin/time -f '%e %U %S' -o "$OUT/tmp/time.out" \
        taskset -c "$CONS_CPU" timeout 120 "$SLUICE" record -e "$OUT/bench_drain.o" "${out[@]}" \
        -- taskset -c "$GEN_CPU" "$OUT/gen" "$N" 2>"$OUT/tmp/err" >/dev/null
    cat "$OUT/tmp/err" "$OUT/tmp/time.out" >>"$LOG"
    local samples lost
    samples=$(sed -n 's/^sluice record: \([0-9]*\) samples.*/\1/p' "$OUT/tmp/err")
    lost=$(sed -n 's/.*; [lL][oO][sS][tT] \([0-9]*\) (.*/\1/p' "$OUT/tmp/err")
    if [[ $1 == perf-data ]]; then
        local s l ls
        read -r s l ls < <(stats "$OUT/tmp/sluice.data")
        echo "# perf reads sluice.data: $s samples, $l LOST records ($(stat -c %s "$OUT/tmp/sluice.data") bytes)"
        [[ $s == "$samples" ]] || echo "# MISMATCH: sluice counted $samples, perf read $s"
    fi
    result sluice-cli "$1" "$OUT/tmp/err" "$OUT/tmp/time.out" "$samples" "$lost"
}

perf_run() {  # $1 pages
    /usr/bin/time -f '%e %U %S' -o "$OUT/tmp/time.out" \
        taskset -c "$CONS_CPU" timeout 120 perf record -q -e syscalls:sys_enter_getppid -m "$1" \
        -o "$OUT/tmp/perf.data" -- taskset -c "$GEN_CPU" "$OUT/gen" "$N" 2>"$OUT/tmp/err" >/dev/null
    cat "$OUT/tmp/err" "$OUT/tmp/time.out" >>"$LOG"
    local s l ls
    read -r s l ls < <(stats "$OUT/tmp/perf.data")
    result perf-record "m$1" "$OUT/tmp/err" "$OUT/tmp/time.out" "$s" "$((l + ls))"
}

for ((rep = 1; rep <= REPS; rep++)); do
    {
        sluice_run perf-data
        sluice_run text
        perf_run 256
        perf_run 64
    } | tee -a "$LOG" | grep "^RESULT" >>"$RES"
done

echo "recorder config events_sent events_received lost consumer_cpu_s wall_s ns_per_event"
awk '/^RESULT/{k=$2" "$3; if(!(k in seen)){seen[k]=++nk; key[nk]=k} n[k]++; line[k, n[k]]=$0; c[k, n[k]]=$9}
END{for(i=1;i<=nk;i++){k=key[i]; m=n[k];
      for(a=1;a<=m;a++) idx[a]=a
      for(a=1;a<=m;a++) for(b=a+1;b<=m;b++) if(c[k,idx[b]]<c[k,idx[a]]){t=idx[a];idx[a]=idx[b];idx[b]=t}
      l=line[k, idx[int((m+1)/2)]]; sub(/^RESULT /,"",l); print l}}' "$RES" | tee "$OUT/medians"
echo "raw runs: $LOG"
