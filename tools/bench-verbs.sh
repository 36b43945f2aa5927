#!/usr/bin/env bash
# The verbs library against the CLI on the same ports: perftest's `ib_write_bw` and `ib_send_lat`
# on libroce_verbs.so (LD_PRELOAD, both sides) beside `roce perf write-bw` and `roce perf
# send-lat`, two processes over one net_memif (shared memory; TCP exchanges on loopback), each
# side on its own CPU, alternated round after round. Prints per round and size the library's
# BW average over roce perf's, and the library's typical latency over roce perf's.
#
#   tools/bench-verbs.sh [ROUNDS]      (default 3; sizes 64 B, 4 KiB, 64 KiB, 1 MiB)
#
# Environment: ROCE (default target/release/roce), LIB (default target/release/libroce_verbs.so;
# `cargo build --release -p roce-verbs`). Needs root (DPDK) and perftest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROCE=${ROCE:-$here/../target/release/roce}
LIB=${LIB:-$here/../target/release/libroce_verbs.so}
ROUNDS=${1:-3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# perftest's BW average (column 4) and typical latency (column 5) under their headers.
bw() { awk '/#bytes/ { getline; print $4; exit }' "$1"; }
lat() { awk '/#bytes/ { getline; print $5; exit }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }

# lib SOCKET CPU IP ARGS...: a perftest tool on the library over memif.
lib() {
    local sock=$1 cpu=$2 ip=$3 role=server
    shift 3
    [ "$cpu" = 1 ] && role=client
    ROCE_VERBS_PORT="memif:$sock,$role" ROCE_VERBS_IP=$ip ROCE_VERBS_CORE=$cpu \
        LD_PRELOAD=$LIB timeout 120 "$@"
}
# pair OUT SERVER_CMD... -- CLIENT_CMD...: both sides, the client's output in OUT.
pair() {
    local out=$1
    shift
    local server=() client=()
    while [ "$1" != "--" ]; do server+=("$1"); shift; done
    shift
    client=("$@")
    "${server[@]}" > "$out.s" 2>&1 &
    sleep 0.5
    "${client[@]}" > "$out" 2>&1
    wait
}

sizes=(64 4096 65536 1048576)
iters() { case $1 in 1048576) echo 200 ;; 65536) echo 1000 ;; *) echo 5000 ;; esac; }

for round in $(seq "$ROUNDS"); do
    line="round $round:"
    for size in "${sizes[@]}"; do
        n=$(iters "$size")
        s=$scratch/s.sock
        pair "$scratch/lib" lib "$s" 0 198.18.0.1 ib_write_bw -d roce0 -x 1 -F -s "$size" -n "$n" -- \
            lib "$s" 1 198.18.0.2 ib_write_bw -d roce0 -x 1 -F -s "$size" -n "$n" 127.0.0.1
        pair "$scratch/perf" "$ROCE" perf write-bw -s "$size" -n "$n" --port "memif:$s" \
            --ip 198.18.0.1/15 --eal "-l 0" -- \
            "$ROCE" perf write-bw -s "$size" -n "$n" --port "memif:$s" --ip 198.18.0.2/15 \
            --eal "-l 1" 127.0.0.1
        a=$(bw "$scratch/lib") b=$(bw "$scratch/perf")
        line="$line write ${size}B lib $a perf $b MB/s ($(ratio "$a" "$b"));"
    done
    pair "$scratch/lib" lib "$s" 0 198.18.0.1 ib_send_lat -d roce0 -x 1 -F -n 2000 -- \
        lib "$s" 1 198.18.0.2 ib_send_lat -d roce0 -x 1 -F -n 2000 127.0.0.1
    pair "$scratch/perf" "$ROCE" perf send-lat -n 2000 --port "memif:$s" --ip 198.18.0.1/15 \
        --eal "-l 0" -- \
        "$ROCE" perf send-lat -n 2000 --port "memif:$s" --ip 198.18.0.2/15 --eal "-l 1" 127.0.0.1
    a=$(lat "$scratch/lib") b=$(lat "$scratch/perf")
    echo "$line send-lat 2B lib $a perf $b us ($(ratio "$a" "$b")); load $(cut -d' ' -f1 /proc/loadavg)"
done
