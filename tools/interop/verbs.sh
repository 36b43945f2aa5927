#!/usr/bin/env bash
# tools/interop/verbs.sh - unmodified RDMA programs on libroce_verbs.so against the Linux
# kernel's Soft-RoCE (rdma_rxe) in a qemu guest, both directions.
#
# The library runs Debian's ibv_rc_pingpong and perftest tools on a DPDK net_af_packet port on
# veth-host (198.18.0.2) in the guest namespace of rxe/run-guest.sh; guest a (198.18.0.11) runs
# the same tools on its rxe0. *_client: the library's program is the client of the guest's;
# *_server: the guest's program connects to the library's (TCP over the bridge, 198.18.0.1).
# Checks (one line each in $RESULTS/summary.txt, PASS or FAIL with the reason):
#   verbs_pingpong_{client,server}   ibv_rc_pingpong -g 1 -c -s 8192 -n 100: both exit 0 and
#                                    print "100 iters" (-c: every buffer checked)
#   verbs_write_bw_{client,server}   ib_write_bw -x 1 -s 65536 -n 200: both exit 0 with a
#   verbs_read_bw_{client,server}    result row of 65536 bytes x 200 (ib_read_bw likewise)
#   verbs_send_lat_{client,server}   ib_send_lat -x 1 -n 100: result rows of 2 bytes x 100
#
# Needs root, qemu and the guest image (tools/interop/run.sh installs and builds both: run it
# once first, or rxe/install-host-deps.sh and rxe/build-guest.sh), the tools (ibverbs-utils,
# perftest) and the library (LIB, default target/debug/libroce_verbs.so: cargo build -p
# roce-verbs). Environment: NS (default roce-verbs-interop), SHARE (default
# /var/tmp/roce-verbs-share), OUT (image dir, default /var/tmp/rxe-guest), RESULTS (default
# target/interop/verbs-<timestamp>), CHECKS (a subset of the names above).
# Exit code: 0 when every check passes, 1 when one fails, 2 when the guest cannot boot, 3 when
# something is missing.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export NS=${NS:-roce-verbs-interop}
export SHARE=${SHARE:-/var/tmp/roce-verbs-share}
export OUT=${OUT:-/var/tmp/rxe-guest}
LIB=${LIB:-$REPO/target/debug/libroce_verbs.so}
RESULTS=${RESULTS:-$REPO/target/interop/verbs-$(date -u +%Y%m%dT%H%M%SZ)}
ALL="verbs_pingpong_client verbs_pingpong_server verbs_write_bw_client verbs_write_bw_server
     verbs_read_bw_client verbs_read_bw_server verbs_send_lat_client verbs_send_lat_server"
CHECKS=${CHECKS:-$ALL}
GUEST_IP=198.18.0.11
BRIDGE_IP=198.18.0.1
mkdir -p "$RESULTS/logs"
SUMMARY=$RESULTS/summary.txt
: > "$SUMMARY"
FAILED=0

log() { echo "[verbs-interop $(date -u +%H:%M:%S)] $*" >&2; }
record() { # record NAME PASS|FAIL DETAIL
    printf '%-24s %-5s %s\n' "$1" "$2" "$3" | tee -a "$SUMMARY" >&2
    [ "$2" = PASS ] || FAILED=1
}
rg() { "$HERE/rxe/run-guest.sh" "$@"; }

[ "$(id -u)" = 0 ] || { log "must run as root (namespaces, qemu)"; exit 3; }
for c in qemu-system-x86_64 ibv_rc_pingpong ib_write_bw; do
    command -v "$c" > /dev/null || { log "$c is missing (see the header)"; exit 3; }
done
[ -s "$OUT/rootfs.img" ] || { log "no guest image in $OUT (run tools/interop/run.sh once)"; exit 3; }
[ -e "$LIB" ] || { log "$LIB is missing: cargo build -p roce-verbs"; exit 3; }

cleanup() {
    local rc=$?
    set +e
    rg stop a > /dev/null 2>&1
    [ -e "$SHARE/a.console" ] && cp "$SHARE/a.console" "$RESULTS/logs/console-a.txt"
    ip netns list 2> /dev/null | grep -qw "$NS" && rg down > /dev/null 2>&1
    log "torn down; results in $RESULTS (exit $rc)"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rg up > "$RESULTS/logs/up.log" 2>&1
rg start a >> "$RESULTS/logs/up.log" 2>&1
if ! timeout 600 "$HERE/rxe/run-guest.sh" wait a >> "$RESULTS/logs/up.log" 2>&1; then
    log "guest a did not boot: $(tail -3 "$SHARE/a.console" 2> /dev/null)"
    exit 2
fi

# host_run NAME ARGS...: the program on the library, in the namespace, on veth-host.
host_run() {
    local name=$1; shift
    timeout 300 ip netns exec "$NS" env ROCE_VERBS_PORT=af_packet:veth-host \
        ROCE_VERBS_IP=198.18.0.2 ROCE_VERBS_COUNTERS="$RESULTS/logs/$name.counters" \
        LD_PRELOAD="$LIB" "$@" > "$RESULTS/logs/$name.host" 2>&1
}

# pair NAME ROLE TOOL ARGS...: runs TOOL on both sides; sets HOUT/GOUT (outputs), HRC/GRC.
pair() {
    local name=$1 role=$2 job; shift 2
    HRC=0
    if [ "$role" = client ]; then
        job=$(rg bg a "$* -d rxe0")
        sleep 4 # the guest's server listens
        host_run "$name" "$@" "$GUEST_IP" || HRC=$?
    else
        host_run "$name" "$@" & local pid=$!
        for _ in $(seq 300); do
            ip netns exec "$NS" ss -Hltn "sport = :18515" | grep -q . && break
            sleep 0.2
        done
        job=$(rg bg a "$* -d rxe0 $BRIDGE_IP")
        wait "$pid" || HRC=$?
    fi
    GRC=0
    timeout 300 "$HERE/rxe/run-guest.sh" result a "$job" > "$RESULTS/logs/$name.guest" 2>&1 || GRC=$?
    HOUT=$(cat "$RESULTS/logs/$name.host")
    GOUT=$(cat "$RESULTS/logs/$name.guest")
}

# row OUT HEADER: the first two fields of perftest's result row under HEADER.
row() { awk -v h="$2" 'found { print $1, $2; exit } index($0, h) { found = 1 }' <<< "$1"; }

judge() { # judge NAME GOT_HOST GOT_GUEST WANT: PASS when both exited 0 and both got WANT
    local name=$1 got_h=$2 got_g=$3 want=$4
    if [ "$HRC" = 0 ] && [ "$GRC" = 0 ] && [ "$got_h" = "$want" ] && [ "$got_g" = "$want" ]; then
        record "$name" PASS "library: $got_h | rxe: $got_g"
    else
        record "$name" FAIL "exit library $HRC rxe $GRC; library: '$got_h' rxe: '$got_g' (want '$want'; logs/$name.*)"
    fi
}

for check in $CHECKS; do
    role=${check##*_}
    case $check in
        verbs_pingpong_*)
            pair "$check" "$role" ibv_rc_pingpong -g 1 -c -s 8192 -n 100
            judge "$check" "$(grep -o '100 iters' <<< "$HOUT" | head -1)" \
                "$(grep -o '100 iters' <<< "$GOUT" | head -1)" "100 iters" ;;
        verbs_write_bw_* | verbs_read_bw_*)
            tool=ib_write_bw; [[ $check = verbs_read_bw_* ]] && tool=ib_read_bw
            pair "$check" "$role" "$tool" -x 1 -F -s 65536 -n 200
            h="#bytes     #iterations    BW peak"
            judge "$check" "$(row "$HOUT" "$h")" "$(row "$GOUT" "$h")" "65536 200" ;;
        verbs_send_lat_*)
            pair "$check" "$role" ib_send_lat -x 1 -F -n 100
            h="#bytes #iterations    t_min"
            judge "$check" "$(row "$HOUT" "$h")" "$(row "$GOUT" "$h")" "2 100" ;;
        *) record "$check" FAIL "unknown check" ;;
    esac
done
log "$(grep -c ' PASS ' "$SUMMARY") passed, $(grep -c ' FAIL ' "$SUMMARY") failed"
exit "$FAILED"
