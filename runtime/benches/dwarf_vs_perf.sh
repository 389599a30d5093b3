#!/usr/bin/env bash
# Resolving probe arguments through DWARF, whole process, sluice beside `perf probe`
# (Debian's linux-perf) on the same specs: median wall time and peak RSS, and the ratios.
#
#   runtime/benches/dwarf_vs_perf.sh [REPS]        (default REPS=21)
#   TARGETS="amd64 arm64 user" (the default: all three) picks some.
#
# sluice runs twice per spec: the CLI a user runs (`sluice prologue --debuginfo FILE --arch A
# SPEC`) and the `dwarf_probe` example (the core resolver and the runtime's mapped file,
# nothing else). perf runs as `perf probe -k VMLINUX -D SPEC` for a kernel and
# `perf probe -x BIN -n -v SPEC` for a user binary. Runs alternate (perf, CLI, example, perf,
# ...) so a noisy machine slows all three alike. Wall is measured around each process
# (bash's EPOCHREALTIME), peak RSS is /usr/bin/time's %M. Each spec's fetch-args are also
# compared once (`same` / `DIFFERS`): a faster wrong answer is no answer.
#
# Targets, each skipped with a message when absent:
#   VMLINUX        an amd64 vmlinux with DWARF
#                  (default ${SLUICE_CACHE:-$HOME/.cache/sluice}/guest/amd64/current/vmlinux)
#   VMLINUX_ARM64  an arm64 one, resolved on this host: aarch64 registers and pt_regs
#                  (default .../guest/arm64/current/vmlinux)
#   USER_BIN       a user binary, with USER_SPECS (a file, one perf spec a line). Default:
#                  the SQLite 3.46 amalgamation (from the libsqlite3-sys 0.30.1 crate) built
#                  here with gcc -g -O2 and a small driver, cached under
#                  ${SLUICE_CACHE:-$HOME/.cache/sluice}/bench/sqlite, with the specs below.
# Needs root (perf probe opens tracefs even for a dry run), perf, gcc, cargo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
REPS=${1:-${REPS:-21}}
cache=${SLUICE_CACHE:-$HOME/.cache/sluice}
VMLINUX=${VMLINUX:-$cache/guest/amd64/current/vmlinux}
VMLINUX_ARM64=${VMLINUX_ARM64:-$cache/guest/arm64/current/vmlinux}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v perf >/dev/null || { echo "perf is needed (apt-get install linux-perf)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is needed (apt-get install time)" >&2; exit 1; }
(cd "$root" && cargo build -q --release -p sluice && cargo build -q --release -p sluice-runtime --example dwarf_probe)
cli=$root/target/release/sluice
example=$root/target/release/examples/dwarf_probe

KERNEL_SPECS=(
    'vfs_read file count pos'
    'generic_perform_write iocb i'
    'vfs_write file buf count pos'
    'do_sys_openat2 dfd filename how'
    'tcp_sendmsg sk msg size'
)
SQLITE_SPECS=(
    'sqlite3_bind_int p i iValue'
    'sqlite3_step pStmt'
    'sqlite3_exec db zSql xCallback pArg'
    'sqlite3DbMallocRawNN db n db->lookaside.sz'
    'sqlite3VdbeExec p p->pc p->nOp'
    'getPageNormal pPager pgno flags pPager->pageSize'
    'sqlite3BtreeInsert+39 pCur pX->nKey flags seekResult'
    'sqlite3ExprCodeTarget pParse pExpr target pExpr->op'
)

# One timed run: wall seconds to stdout, peak KB appended to $work/rss.
timed() {
    local t0 t1
    t0=$EPOCHREALTIME
    /usr/bin/time -f '%M' -o "$work/t" "$@" >/dev/null 2>&1 || true
    t1=$EPOCHREALTIME
    tail -1 "$work/t" >>"$work/rss.$tag"
    echo "$t0 $t1" | awk '{printf "%.6f\n", $2 - $1}' >>"$work/wall.$tag"
}

median() { sort -n "$1" | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
maxof() { sort -n "$1" | tail -1; }

# The fetch-args of a kernel spec: perf's `-D` line and our CLI's `fetch-args:` line.
kernel_args_same() {  # file arch spec
    local p o
    p=$(perf probe -k "$1" -D "$3" 2>/dev/null | awk '/^p:/{$1=""; $2=""; print}' | sed 's/^ *//' | sort)
    o=$("$cli" prologue --debuginfo "$1" --arch "$2" "$3" 2>/dev/null | sed -n 's/^fetch-args: //p' | sort)
    [[ -n $p && $p == "$o" ]] && echo same || echo "DIFFERS (perf: ${p:-none}; ours: ${o:-none})"
}

user_args_same() {  # bin spec
    local p o
    p=$(perf probe -x "$1" -n -v "$2" 2>&1 | sed -n 's/^Writing event: [^ ]* [^ ]* *//p' | sort)
    o=$("$example" "$1" "$2" 2>/dev/null | awk '/^p:/{$1=""; $2=""; print}' | sed 's/^ *//' | sort)
    [[ -n $p && $p == "$o" ]] && echo same || echo "DIFFERS (perf: ${p:-none}; ours: ${o:-none})"
}

summary=()
ratios() {  # label: reads $work/{wall,rss}.{perf,cli,ex}
    local pw cw ew pr cr er
    pw=$(median "$work/wall.perf"); cw=$(median "$work/wall.cli"); ew=$(median "$work/wall.ex")
    pr=$(maxof "$work/rss.perf"); cr=$(maxof "$work/rss.cli"); er=$(maxof "$work/rss.ex")
    awk -v l="$1" -v pw="$pw" -v cw="$cw" -v ew="$ew" -v pr="$pr" -v cr="$cr" -v er="$er" 'BEGIN{
        printf "  %-58s perf %7.1f ms %6.1f MB | cli %6.1f ms %5.1f MB (%4.1fx, %4.1fx) | example %6.1f ms %5.1f MB (%4.1fx, %4.1fx)\n",
            l, pw*1000, pr/1024, cw*1000, cr/1024, pw/cw, pr/cr, ew*1000, er/1024, pw/ew, pr/er }'
    echo "$pw $cw $ew $pr $cr $er" >>"$work/all.$target"
}

target_summary() {  # target: geometric means of the per-spec ratios
    awk -v t="$1" '{ lw1 += log($1/$2); lw2 += log($1/$3); lr1 += log($4/$5); lr2 += log($4/$6); n++ }
        END { if (n) printf "%s (%d specs, geometric mean of perf/ours): cli %.1fx faster, %.1fx less RSS; example %.1fx faster, %.1fx less RSS\n",
            t, n, exp(lw1/n), exp(lr1/n), exp(lw2/n), exp(lr2/n) }' "$work/all.$1"
}

bench_kernel() {  # target file arch
    target=$1
    local file=$2 arch=$3 spec r
    if [[ ! -f $file ]]; then
        echo "== $target: SKIPPED, no vmlinux at $file (set VMLINUX / VMLINUX_ARM64)"
        return
    fi
    echo "== $target: $file ($REPS runs per tool and spec; median wall, peak RSS; ratios perf/ours)"
    : >"$work/all.$target"
    for spec in "${KERNEL_SPECS[@]}"; do
        rm -f "$work"/wall.* "$work"/rss.*
        for ((r = 0; r < REPS; r++)); do
            tag=perf timed perf probe -k "$file" -D "$spec"
            tag=cli timed "$cli" prologue --debuginfo "$file" --arch "$arch" "$spec"
            tag=ex timed "$example" "$file" "$spec"
        done
        ratios "$spec [$(kernel_args_same "$file" "$arch" "$spec")]"
    done
    summary+=("$(target_summary "$target")")
}

bench_user() {  # target bin specs...
    target=$1
    local bin=$2 spec r
    shift 2
    echo "== $target: $bin ($REPS runs per tool and spec; median wall, peak RSS; ratios perf/ours)"
    : >"$work/all.$target"
    for spec in "$@"; do
        local func=${spec%% *} args=${spec#* }
        [[ $args == "$spec" ]] && args=
        rm -f "$work"/wall.* "$work"/rss.*
        for ((r = 0; r < REPS; r++)); do
            tag=perf timed perf probe -x "$bin" -n -v "$spec"
            tag=cli timed "$cli" prologue "uprobe/$bin:$func(${args// /, })"
            tag=ex timed "$example" "$bin" "$spec"
        done
        ratios "$spec [$(user_args_same "$bin" "$spec")]"
    done
    summary+=("$(target_summary "$target")")
}

sqlite_driver() {  # builds (once) and prints the path of the SQLite benchmark binary
    local dir=$cache/bench/sqlite
    if [[ ! -x $dir/sqlite_bench ]]; then
        mkdir -p "$dir/fetch/src"
        cat >"$dir/fetch/Cargo.toml" <<'EOF'
[package]
name = "fetch-sqlite"
version = "0.0.0"
edition = "2021"
[dependencies]
libsqlite3-sys = { version = "=0.30.1", features = ["bundled"] }
EOF
        echo 'fn main() {}' >"$dir/fetch/src/main.rs"
        (cd "$dir/fetch" && cargo vendor -q ../vendor >/dev/null)
        cat >"$dir/main.c" <<'EOF'
#include <stdio.h>
#include "sqlite3.h"
int main(void) {
    sqlite3 *db;
    sqlite3_stmt *st;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
    sqlite3_exec(db, "create table t(a integer, b text)", 0, 0, 0);
    sqlite3_prepare_v2(db, "insert into t values(?, 'x')", -1, &st, 0);
    for (int i = 0; i < 100; i++) {
        sqlite3_bind_int(st, 1, i);
        sqlite3_step(st);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return 0;
}
EOF
        local s=$dir/vendor/libsqlite3-sys/sqlite3
        gcc -g -O2 -I"$s" -o "$dir/sqlite_bench" "$s/sqlite3.c" "$dir/main.c" -lm -lpthread -ldl
    fi
    echo "$dir/sqlite_bench"
}

TARGETS=${TARGETS:-amd64 arm64 user}
[[ " $TARGETS " == *" amd64 "* ]] && bench_kernel vmlinux-amd64 "$VMLINUX" x86_64
[[ " $TARGETS " == *" arm64 "* ]] && bench_kernel vmlinux-arm64 "$VMLINUX_ARM64" aarch64
if [[ " $TARGETS " != *" user "* ]]; then
    :
elif [[ -n ${USER_BIN:-} ]]; then
    mapfile -t specs < <(grep -v '^#' "${USER_SPECS:?USER_SPECS names the specs file for USER_BIN}" | grep .)
    bench_user "$(basename "$USER_BIN")" "$USER_BIN" "${specs[@]}"
else
    bench_user sqlite "$(sqlite_driver)" "${SQLITE_SPECS[@]}"
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
