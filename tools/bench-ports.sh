#!/usr/bin/env bash
# `roce perf write-bw` between two processes over three ports, round after round: net_memif
# (shared memory, the exchange on loopback), net_af_xdp on the ends of a veth pair with one queue
# each (DPDK's default XDP program) and net_tap on a bridge (tools/netns.sh); prints each
# round's client BW average per port and the ratios to net_tap. Each round also moves bare
# frames of the same size over the same memif ports (`roce port bench`, 1082-byte WRITE Middle
# frames of a 1024-byte MTU) and gives roce's payload rate over memif against that frame rate
# times the 1024 payload bytes each of roce's frames carries. Each side keeps one CPU
# (`-l 0`, `-l 1`). Needs root.
#
#   tools/bench-ports.sh [ROUNDS] [SIZE] [ITERS]      (defaults: 3 65536 1000)
#
# Environment: ROCE (default target/release/roce). Namespaces roce-bench and roce-bench-xdp
# (198.18.0.0/15) are made and deleted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROCE=${ROCE:-$here/../target/release/roce}
ROUNDS=${1:-3}
SIZE=${2:-65536}
ITERS=${3:-1000}
scratch=$(mktemp -d)
XNS=roce-bench-xdp
export NS=roce-bench BR=rbrb
cleanup() { ip netns del "$XNS" 2>/dev/null || true; "$here/netns.sh" down; rm -rf "$scratch"; }
trap cleanup EXIT
run=("perf" "write-bw" "-s" "$SIZE" "-n" "$ITERS" "--timeout" "30")
cpu0=(--eal "-l 0")
cpu1=(--eal "-l 1")
avg() { awk '/#bytes/ { getline; print $4; exit }' "$1"; }
# The payload-equivalent MB/s (2^20 bytes, as perftest's) of a `roce port bench` receiver.
raw_payload() { awk '/^received/ { for (i = 1; i <= NF; i++) if ($i == "Mframes/s,") printf "%.2f", $(i - 1) * 1e6 * 1024 / 1048576 }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

for round in $(seq "$ROUNDS"); do
    "$ROCE" port bench --port "memif:$scratch/r.sock" -n 1000000 "${cpu0[@]}" > "$scratch/rr" 2>&1 &
    "$ROCE" port bench --port "memif:$scratch/r.sock" -n 1000000 --send "${cpu1[@]}" > "$scratch/rs" 2>&1
    wait
    raw=$(raw_payload "$scratch/rr")

    "$ROCE" "${run[@]}" --port "memif:$scratch/m.sock" --ip 198.18.0.1/15 "${cpu0[@]}" > "$scratch/ms" 2>&1 &
    "$ROCE" "${run[@]}" --port "memif:$scratch/m.sock" --ip 198.18.0.2/15 "${cpu1[@]}" 127.0.0.1 > "$scratch/mc" 2>&1
    wait
    memif=$(avg "$scratch/mc")

    ip netns add "$XNS"
    ip -n "$XNS" link set lo up
    ip -n "$XNS" link add rxa numtxqueues 1 numrxqueues 1 type veth \
        peer name rxb numtxqueues 1 numrxqueues 1
    ip -n "$XNS" link set rxa up
    ip -n "$XNS" link set rxb up
    ip netns exec "$XNS" "$ROCE" "${run[@]}" --port af_xdp:rxa --ip 198.18.0.1/15 "${cpu0[@]}" > "$scratch/xs" 2>&1 &
    ip netns exec "$XNS" "$ROCE" "${run[@]}" --port af_xdp:rxb --ip 198.18.0.2/15 "${cpu1[@]}" 127.0.0.1 \
        > "$scratch/xc" 2>&1
    wait
    ip netns del "$XNS"
    xdp=$(avg "$scratch/xc")

    "$here/netns.sh" up
    "$here/netns.sh" run "$ROCE" "${run[@]}" --port tap:btap0 --ip 198.18.0.1/15 "${cpu0[@]}" > "$scratch/ts" 2>&1 &
    "$here/netns.sh" attach btap0
    "$here/netns.sh" run "$ROCE" "${run[@]}" --port tap:btap1 --ip 198.18.0.2/15 "${cpu1[@]}" 198.18.0.254 \
        > "$scratch/tc" 2>&1 &
    "$here/netns.sh" attach btap1
    wait
    "$here/netns.sh" down
    tap=$(avg "$scratch/tc")

    echo "round $round: MB/s memif $memif af_xdp $xdp net_tap $tap, bare memif frames $raw;" \
        "memif/bare $(ratio "$memif" "$raw") memif/tap $(ratio "$memif" "$tap") af_xdp/tap $(ratio "$xdp" "$tap");" \
        "load $(cut -d' ' -f1 /proc/loadavg)"
done
