#!/usr/bin/env bash
# tools/interop/run.sh - roce against the Linux kernel's Soft-RoCE (rdma_rxe), end to end.
#
# On a fresh Debian 12 machine (root, no internet but the Debian mirror):
#   1. installs the peer's host packages (rxe/install-host-deps.sh: qemu, debootstrap, tcpdump,
#      tshark) unless they are there;
#   2. builds the guest image once (rxe/build-guest.sh) into $OUT (default /var/tmp/rxe-guest,
#      outside the repo; about 50 s on an idle host, several minutes on a loaded one);
#   3. brings up a private network namespace $NS with the bridge br-rxe, boots guests a
#      (198.18.0.11) and b (198.18.0.12);
#   4. runs the checks below, capturing every exchange on br-rxe;
#   5. collects logs, pcaps, consoles and timings into $RESULTS;
#   6. tears everything down in an EXIT trap (tcpdump and qemu by pid, then the namespace),
#      also when a check fails or the run is interrupted.
#
# Checks (one line each in $RESULTS/summary.txt, PASS or FAIL; a check that cannot run FAILs
# with the reason, nothing is skipped):
#   guest_boot            guests a and b reach READY; if not, the run stops here with the
#                         console tail and exit code 2
#   rxe_rc_pingpong       ibv_rc_pingpong a (server) <-> b (client); `roce pcap check` is clean
#   rxe_write_bw          ib_write_bw a <-> b; `roce pcap check` is clean
#   rxe_verbs_peer        rc_verbs_peer.py a <-> b (SEND/WRITE with imm, atomics); pcap clean
#   arp_capture           the guests' ARP frames on br-rxe (pcaps/arp.pcap) for tests/it/interop_rxe.rs
#   ndp_capture           IPv6 neighbour solicitation/advertisement between the guests
#                         (pcaps/ndp.pcap; guests get 2001:db8::11 and ::12)
# roce (a DPDK net_af_packet port on br-rxe, 198.18.0.2) against the tools on guest a, each
# both ways: *_client = roce is the client of the tool, *_server = the tool is roce's client.
# Every roce check also needs `roce pcap check` clean (zero ICRC errors, nothing malformed):
#   roce_pingpong_*       ibv_rc_pingpong -c, 64 B and 8192 B, -m 1024, 100 iterations: both
#                         exit 0, print "100 iters", no "invalid data" (roce pingpong -c too)
#   roce_perftest_bw      ib_write_bw, ib_read_bw, ib_send_bw at 64 B and 64 KiB, -n 200, vs
#                         `roce perf *-bw --peer-format perftest`: both exit 0 and both outputs
#                         have a result line that parses as perftest's (size, iterations)
#   roce_perftest_lat     ib_send_lat and ib_write_lat, -n 100, the same way
#   roce_verbs            rc_verbs_peer.py vs `roce perf verbs-peer`: the server saw the
#                         script's immediates 0x11223345 0x55667702 0x55667703 0x11223348 and
#                         ends with the atomic target at 7; the client saw FETCH_ADD return 100
#                         and CMP_SWAP 105
#   roce_ecn              as roce_verbs with rxe's traffic class 2 (ECT(0)) and an nftables rule
#                         on br-rxe setting CE on RoCE frames towards roce (roce as client also
#                         READs): the transfer completes, roce's np_ecn_marked_roce_packets and
#                         np_cnp_sent are > 0, CE frames reached roce (<check>-delivered.pcap,
#                         captured on veth-host) and roce's CNPs (0x81) crossed the bridge
#   roce_faults           roce's fault injection (--loss 0.02: 2% of its outgoing and incoming
#                         frames dropped) on ib_write_bw and ib_read_bw (4096 B, -n 200) and on
#                         ibv_rc_pingpong -c (8192 B): complete, data checks clean, the injector
#                         dropped frames both ways and roce's counters show the repair
#                         (retransmitted_packets, packet_seq_err, out_of_sequence, ...);
#                         pingpong's one unrepairable ending is judged by last_ack_lost
# Optional (CHECKS=...): oob_pingpong_client, oob_pingpong_server, oob_perftest_client,
# oob_verbs_peer_client run roce's TCP exchange alone (`roce oob`, no QP) against the tools;
# they pre-seed the guests' neighbour entry for 198.18.0.2 with a dummy MAC.
# Exit code: 0 when every check passes, 1 when one fails, 2 when the guests cannot boot, 3 when
# the setup (deps, image, roce build) fails.
#
# Environment: NS (default roce-interop), SHARE (9p dir, default /var/tmp/roce-interop-share),
#   OUT (image dir), RESULTS (default target/interop/<timestamp>), SKIP_DEPS=1, CHECKS (space-
#   separated subset of the names above), ROCE_BIN (a roce built with DPDK; default: build it
#   with `cargo build --bin roce`), RXE_DIR (peer scripts, default tools/interop/rxe, copied
#   unmodified from the shared peers folder), KEEP=1 (leave the guests and the namespace up
#   for the next run, which then reuses them: for working on one check).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
RXE=${RXE_DIR:-$HERE/rxe}
export NS=${NS:-roce-interop}
export SHARE=${SHARE:-/var/tmp/roce-interop-share}
export OUT=${OUT:-/var/tmp/rxe-guest}
RESULTS=${RESULTS:-$REPO/target/interop/$(date -u +%Y%m%dT%H%M%SZ)}
CHECKS=${CHECKS:-"rxe_rc_pingpong rxe_write_bw rxe_verbs_peer arp_capture ndp_capture roce_pingpong_client roce_pingpong_server roce_perftest_bw roce_perftest_lat roce_verbs roce_ecn roce_faults"}
GUESTS="a b"

mkdir -p "$RESULTS/pcaps" "$RESULTS/logs"
SUMMARY=$RESULTS/summary.txt
TIMINGS=$RESULTS/timings.txt
: > "$SUMMARY"
: > "$TIMINGS"
BG_PIDS=()
FAILED=0

log() { echo "[interop $(date -u +%H:%M:%S)] $*" >&2; }
now() { date +%s.%N; }
elapsed() { printf '%.1f' "$(echo "$(now) - $1" | bc)"; }
record() { # record NAME PASS|FAIL DETAIL
    printf '%-22s %-8s %s\n' "$1" "$2" "$3" | tee -a "$SUMMARY" >&2
    [ "$2" != FAIL ] || FAILED=1
}
rg() { "$RXE/run-guest.sh" "$@"; }

cleanup() {
    local rc=$?
    set +e
    for pid in "${BG_PIDS[@]}"; do
        kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    for g in $GUESTS; do
        [ "${KEEP:-0}" = 1 ] || rg stop "$g" >/dev/null 2>&1
        [ -e "$SHARE/$g.console" ] && cp "$SHARE/$g.console" "$RESULTS/logs/console-$g.txt"
    done
    if [ "${KEEP:-0}" = 1 ]; then
        log "KEEP=1: guests and namespace $NS left running (stop: NS=$NS SHARE=$SHARE $RXE/run-guest.sh down)"
    else
        ip netns list 2>/dev/null | grep -qw "$NS" && rg down >/dev/null 2>&1
    fi
    log "torn down; results in $RESULTS (exit $rc)"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- setup ---------------------------------------------------------------------------------
setup_deps() {
    [ "$(id -u)" = 0 ] || { log "must run as root (namespaces, taps, qemu)"; exit 3; }
    local missing=0 c
    for c in qemu-system-x86_64 debootstrap tcpdump tshark bc python3 nft; do
        command -v "$c" >/dev/null || missing=1
    done
    if [ "$missing" = 1 ]; then
        [ "${SKIP_DEPS:-0}" = 1 ] && { log "host packages missing and SKIP_DEPS=1"; exit 3; }
        log "installing host packages (rxe/install-host-deps.sh)"
        local t0; t0=$(now)
        { "$RXE/install-host-deps.sh" && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nftables; } \
            > "$RESULTS/logs/install-host-deps.log" 2>&1 \
            || { log "install-host-deps.sh failed: see $RESULTS/logs/install-host-deps.log"; exit 3; }
        echo "host_deps_s $(elapsed "$t0")" >> "$TIMINGS"
    fi
}

setup_image() {
    mkdir -p "$(dirname "$OUT")"
    # One builder at a time; later runs reuse the image.
    exec 9> "$OUT.lock"
    flock 9
    if [ ! -s "$OUT/rootfs.img" ] || [ ! -s "$OUT/vmlinuz" ] || [ ! -s "$OUT/initrd.img" ]; then
        log "building the guest image into $OUT (once)"
        local t0; t0=$(now)
        "$RXE/build-guest.sh" "$OUT" > "$RESULTS/logs/build-guest.log" 2>&1 \
            || { log "build-guest.sh failed: see $RESULTS/logs/build-guest.log"; exit 3; }
        echo "image_build_s $(elapsed "$t0")" >> "$TIMINGS"
    else
        echo "image_build_s cached" >> "$TIMINGS"
    fi
    flock -u 9
}

setup_roce() {
    if [ -z "${ROCE_BIN:-}" ]; then
        log "building roce (with DPDK)"
        (cd "$REPO" && cargo build -q --bin roce) \
            > "$RESULTS/logs/cargo-build.log" 2>&1 \
            || { log "cargo build failed: see $RESULTS/logs/cargo-build.log"; exit 3; }
        ROCE_BIN=${CARGO_TARGET_DIR:-$REPO/target}/debug/roce
    fi
    [ -x "$ROCE_BIN" ] || { log "no roce binary at $ROCE_BIN"; exit 3; }
}

boot_failed() { # boot_failed REASON FILE LINES: record, show the file's tail, stop the run
    record guest_boot FAIL "$1"
    tail -"$3" "$2" | sed 's/^/    /' | tee -a "$SUMMARY" >&2
    exit 2
}

guest_alive() { # guest_alive G: qemu runs and the guest reported READY
    [ -e "$SHARE/$1.pid" ] && kill -0 "$(cat "$SHARE/$1.pid")" 2>/dev/null && [ -e "$SHARE/$1/out/READY" ]
}

boot_guests() {
    rg up > "$RESULTS/logs/netns.log" 2>&1
    if [ "${KEEP:-0}" = 1 ] && guest_alive a && guest_alive b; then
        record guest_boot PASS "a and b reused (KEEP=1)"
        return
    fi
    local t0 g; t0=$(now)
    for g in $GUESTS; do
        rg start "$g" >> "$RESULTS/logs/netns.log" 2>&1 \
            || boot_failed "qemu could not start guest $g:" "$RESULTS/logs/netns.log" 5
    done
    for g in $GUESTS; do
        rg wait "$g" >> "$RESULTS/logs/netns.log" 2>&1 \
            || boot_failed "guest $g not ready; console tail:" "$SHARE/$g.console" 20
    done
    local s; s=$(elapsed "$t0")
    echo "boot_two_guests_s $s" >> "$TIMINGS"
    record guest_boot PASS "a and b ready in ${s} s"
}

# ---- helpers for checks --------------------------------------------------------------------
start_capture() { # start_capture NAME FILTER -> pid in CAPTURE_PID (on $CAPTURE_IF, default br-rxe)
    ip netns exec "$NS" tcpdump -i "${CAPTURE_IF:-br-rxe}" -U -s 0 -w "$RESULTS/pcaps/$1.pcap" "$2" \
        2> "$RESULTS/logs/tcpdump-$1.log" &
    CAPTURE_PID=$!
    BG_PIDS+=("$CAPTURE_PID")
    sleep 1
}

stop_capture() { # stop_capture PID
    sleep 1
    kill -INT "$1" 2>/dev/null && wait "$1" 2>/dev/null || true
}

wait_listen() { # wait_listen GUEST PORT
    rg exec "$1" "for i in \$(seq 1 200); do ss -ltn | grep -q ':$2 ' && exit 0; sleep 0.1; done; echo not-listening; exit 1"
}

pair_run() { # pair_run NAME PORT 'server cmd on a' 'client cmd on b'
    local name=$1 port=$2 srv=$3 cli=$4 sid crc src cout sout
    sid=$(rg bg a "$srv")
    wait_listen a "$port" > /dev/null || { echo "server on a never listened on $port"; return 1; }
    cout=$(rg exec b "$cli"); crc=$?
    sout=$(rg result a "$sid"); src=$?
    {
        echo "# server (guest a, rc=$src): $srv"; echo "$sout"
        echo "# client (guest b, rc=$crc): $cli"; echo "$cout"
    } > "$RESULTS/logs/$name.log"
    [ "$src" = 0 ] && [ "$crc" = 0 ] || { echo "server rc=$src client rc=$crc (see logs/$name.log)"; return 1; }
}

pcap_clean() { # pcap_clean NAME MIN_ROCE -> prints the summary; fails unless clean
    local out
    out=$("$ROCE_BIN" pcap check --json "$RESULTS/pcaps/$1.pcap" 2> "$RESULTS/logs/pcap-check-$1.err")
    local rc=$?
    echo "$out" > "$RESULTS/logs/pcap-check-$1.json"
    echo "$out" | python3 -c '
import json, sys
need = int(sys.argv[1])
s = [json.loads(l) for l in sys.stdin if l.strip().startswith("{")]
s = [o for o in s if o.get("summary")]
if not s: sys.exit("no summary from roce pcap check")
s = s[-1]
print("frames={frames} roce={roce} icrc_ok={icrc_ok} icrc_bad={icrc_bad} malformed={malformed}".format(**s))
sys.exit(0 if s["roce"] >= need and s["icrc_bad"] == 0 and s["malformed"] == 0 and s["icrc_ok"] == s["roce"] else 1)
' "$2" && [ "$rc" = 0 ]
}

rxe_pair_check() { # rxe_pair_check NAME PORT MIN_ROCE SERVER CLIENT
    local name=$1 detail t0
    t0=$(now)
    start_capture "$name" "udp port 4791 or tcp port $2"
    local cap=$CAPTURE_PID
    if ! detail=$(pair_run "$name" "$2" "$4" "$5" 2>&1); then
        stop_capture "$cap"; record "$name" FAIL "$detail"; return
    fi
    stop_capture "$cap"
    if detail=$(pcap_clean "$name" "$3" 2>&1); then
        record "$name" PASS "$detail ($(elapsed "$t0") s)"
    else
        record "$name" FAIL "roce pcap check: $detail"
    fi
}

# ---- checks between the two Linux guests (prove the peer and the capture chain) -------------
check_rxe_rc_pingpong() {
    rxe_pair_check rxe_rc_pingpong 18515 20 \
        'ibv_rc_pingpong -d rxe0 -g 1 -s 64 -n 5' \
        'ibv_rc_pingpong -d rxe0 -g 1 -s 64 -n 5 198.18.0.11'
}
check_rxe_write_bw() {
    rxe_pair_check rxe_write_bw 18515 10 \
        'ib_write_bw -d rxe0 -x 1 -F -s 64 -n 5' \
        'ib_write_bw -d rxe0 -x 1 -F -s 64 -n 5 198.18.0.11'
}
check_rxe_verbs_peer() {
    rxe_pair_check rxe_verbs_peer 18516 20 \
        'python3 /mnt/host/rc_verbs_peer.py server' \
        'python3 /mnt/host/rc_verbs_peer.py client 198.18.0.11'
}
check_arp_capture() {
    # The guests ARP for each other (flush first so they must) while a capture runs.
    start_capture arp arp
    local cap=$CAPTURE_PID
    rg exec a 'ip neigh flush dev eth0' > /dev/null
    rg exec b 'ip neigh flush dev eth0; ping -c 1 -W 2 198.18.0.11' > "$RESULTS/logs/arp.log" 2>&1
    stop_capture "$cap"
    local n; n=$(tcpdump -r "$RESULTS/pcaps/arp.pcap" arp 2>/dev/null | wc -l)
    if [ "$n" -ge 2 ]; then record arp_capture PASS "$n ARP frames"; else record arp_capture FAIL "$n ARP frames"; fi
}

check_ndp_capture() {
    start_capture ndp 'icmp6 and (ip6[40] == 135 or ip6[40] == 136)'
    local cap=$CAPTURE_PID
    rg exec a 'ip -6 addr replace 2001:db8::11/64 dev eth0 nodad' > /dev/null
    rg exec b 'ip -6 addr replace 2001:db8::12/64 dev eth0 nodad; ip -6 neigh flush dev eth0; ping -6 -c 1 -W 3 2001:db8::11' \
        > "$RESULTS/logs/ndp.log" 2>&1
    stop_capture "$cap"
    local n; n=$(tcpdump -r "$RESULTS/pcaps/ndp.pcap" 2>/dev/null | wc -l)
    if [ "$n" -ge 2 ]; then record ndp_capture PASS "$n NS/NA frames"; else record ndp_capture FAIL "$n NS/NA frames"; fi
}

# ---- roce's own TCP exchange (roce::oob) against the real tools; no QP on our side ----------
OOB_MINE="QPN 0x000abc, PSN 0x123456, GID ::ffff:198.18.0.2"
seed_neigh() { rg exec "$1" 'ip neigh replace 198.18.0.2 lladdr 02:00:00:00:00:02 dev eth0 nud permanent' > /dev/null; }

oob_vs_guest_server() { # NAME PORT 'server cmd on a' GREP_IN_SERVER_OUTPUT|'' roce oob ARGS...
    local name=$1 port=$2 srv=$3 want=$4 t0 sid out rrc sout src; shift 4
    t0=$(now)
    seed_neigh a
    start_capture "$name" "tcp port $port or udp port 4791"
    local cap=$CAPTURE_PID
    sid=$(rg bg a "$srv")
    wait_listen a "$port" > /dev/null || { stop_capture "$cap"; record "$name" FAIL "server never listened"; return; }
    out=$(ip netns exec "$NS" timeout 60 "$ROCE_BIN" oob "$@" 2>&1); rrc=$?
    sout=$(rg result a "$sid"); src=$?
    stop_capture "$cap"
    printf '# roce oob %s (rc=%s)\n%s\n# guest a (rc=%s): %s\n%s\n' "$*" "$rrc" "$out" "$src" "$srv" "$sout" \
        > "$RESULTS/logs/$name.log"
    if [ "$rrc" != 0 ]; then record "$name" FAIL "roce oob rc=$rrc: $out"; return; fi
    if [ -n "$want" ]; then
        echo "$sout" | grep -qF "$want" || { record "$name" FAIL "guest did not see our data (logs/$name.log)"; return; }
    elif [ "$src" != 0 ]; then
        record "$name" FAIL "guest tool rc=$src (logs/$name.log)"; return
    fi
    record "$name" PASS "peer: $out ($(elapsed "$t0") s)"
}
check_oob_pingpong_client() {
    # The server waits for a SEND that never comes after the exchange: timeout ends it (and
    # stdbuf keeps its output, which a killed process would otherwise lose in its buffer).
    oob_vs_guest_server oob_pingpong_client 18515 'timeout 15 stdbuf -oL ibv_rc_pingpong -d rxe0 -g 1 -s 64 -n 1' \
        "remote address: LID 0x0000, $OOB_MINE" pingpong-client 198.18.0.11:18515
}
check_oob_perftest_client() {
    oob_vs_guest_server oob_perftest_client 18515 'ib_write_bw -d rxe0 -x 1 -F -s 64 -n 5' "" \
        perftest-client 198.18.0.11:18515
}
check_oob_verbs_peer_client() {
    oob_vs_guest_server oob_verbs_peer_client 18516 'python3 /mnt/host/rc_verbs_peer.py server' "" \
        verbs-peer-client 198.18.0.11:18516
}
check_oob_pingpong_server() {
    local name=oob_pingpong_server t0 pid out rrc cout
    t0=$(now)
    seed_neigh b
    start_capture "$name" "tcp port 18515 or udp port 4791"
    local cap=$CAPTURE_PID
    ip netns exec "$NS" timeout 60 "$ROCE_BIN" oob pingpong-server --listen 198.18.0.1:18515 \
        > "$RESULTS/logs/$name.roce" 2>&1 &
    pid=$!
    BG_PIDS+=("$pid")
    sleep 1
    # The client's SENDs go unanswered after the exchange (no QP here): its rc is not ours.
    cout=$(rg exec b 'timeout 20 stdbuf -oL ibv_rc_pingpong -d rxe0 -g 1 -s 64 -n 1 198.18.0.1' 2>&1)
    wait "$pid"; rrc=$?
    stop_capture "$cap"
    out=$(cat "$RESULTS/logs/$name.roce")
    printf '# roce oob pingpong-server (rc=%s)\n%s\n# guest b\n%s\n' "$rrc" "$out" "$cout" > "$RESULTS/logs/$name.log"
    if [ "$rrc" = 0 ] && echo "$cout" | grep -qF "remote address: LID 0x0000, $OOB_MINE"; then
        record "$name" PASS "peer: $out ($(elapsed "$t0") s)"
    else
        record "$name" FAIL "roce rc=$rrc (logs/$name.log)"
    fi
}

# ==== roce (a DPDK port on br-rxe) against the tools on guest a, both ways ===================
# roce joins br-rxe through veth-host (a bridge port without a kernel IP) with a DPDK
# net_af_packet port, address 198.18.0.2 and its own MAC (derived from veth-host's); it answers
# ARP itself (roce::host) and runs the TCP exchange on the namespace's kernel stack
# (198.18.0.1). Each check runs both ways: `_client` = roce is the client of the tool on guest a
# (198.18.0.11), `_server` = the tool on guest a is the client of roce (198.18.0.1). These
# checks need a roce built with DPDK (ROCE_BIN=target/debug/roce after `cargo build --bin roce`);
# a roce without the subcommand FAILs them, with the reason.
ROCE_PORT_ARGS=(--port af_packet:veth-host --ip 198.18.0.2/15 --timeout 20)
roce_has() { "$ROCE_BIN" help 2>/dev/null | grep -qE "^\s+$1\b"; }
# The oob_* checks pinned 198.18.0.2 to a dummy MAC on the guests: let them ARP for us again.
unseed_neigh() { rg exec "$1" 'ip neigh del 198.18.0.2 dev eth0 2>/dev/null; true' > /dev/null; }
roce_attach_port() { # roce_attach_port ARGS... : runs roce on the bridge; prints its output
    ip netns exec "$NS" timeout 90 "$ROCE_BIN" "$@" "${ROCE_PORT_ARGS[@]}"
}
ns_listening() { # ns_listening PORT: waits up to 30 s for a TCP listener in the namespace
    local i
    for i in $(seq 1 300); do
        ip netns exec "$NS" ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
        sleep 0.1
    done
    return 1
}

# roce_pair NAME TCP_PORT client|server 'tool on guest a (@HOST@ = the server)' ROCE ARGS...
# Runs both sides with a capture; leaves ROUT/RRC (roce) and GOUT/GRC (guest) and the log.
roce_pair() {
    local name=$1 port=$2 role=$3 gcmd=$4 sid pid cap; shift 4
    unseed_neigh a
    start_capture "$name" "arp or udp port 4791 or tcp port $port"
    cap=$CAPTURE_PID
    if [ "$role" = client ]; then
        gcmd=${gcmd//@HOST@/}
        sid=$(rg bg a "timeout 80 $gcmd")
        wait_listen a "$port" > /dev/null
        ROUT=$(roce_attach_port "$@" 198.18.0.11 2>&1); RRC=$?
        GOUT=$(rg result a "$sid" 2>&1); GRC=$?
    else
        gcmd=${gcmd//@HOST@/198.18.0.1}
        roce_attach_port "$@" > "$RESULTS/logs/$name.roce" 2>&1 &
        pid=$!
        BG_PIDS+=("$pid")
        ns_listening "$port" || true
        GOUT=$(rg exec a "timeout 80 $gcmd" 2>&1); GRC=$?
        wait "$pid"; RRC=$?
        ROUT=$(cat "$RESULTS/logs/$name.roce")
    fi
    stop_capture "$cap"
    printf '# roce as %s (rc=%s): roce %s\n%s\n# guest a (rc=%s): %s\n%s\n' \
        "$role" "$RRC" "$*" "$ROUT" "$GRC" "$gcmd" "$GOUT" > "$RESULTS/logs/$name.log"
}

# judge NAME T0 MIN_ROCE 'condition (shell, may use ROUT/GOUT)' 'detail on PASS'
judge() {
    local name=$1 t0=$2 min=$3 cond=$4 detail=$5 pc
    if [ "$RRC" != 0 ] || [ "$GRC" != 0 ]; then
        record "$name" FAIL "roce rc=$RRC guest rc=$GRC: $(echo "$ROUT" | grep -E '^roce: ' | head -1) (logs/$name.log)"
    elif ! (set +o pipefail; eval "$cond"); then  # `grep -q` may close a pipe early: no SIGPIPE failures
        record "$name" FAIL "results not as expected (logs/$name.log)"
    elif ! pc=$(pcap_clean "$name" "$min" 2>&1); then
        record "$name" FAIL "roce pcap check: $pc"
    else
        record "$name" PASS "$detail; $pc ($(elapsed "$t0") s)"
    fi
}

# perftest_result TEXT SIZE ITERS: the result line after perftest's header parses as perftest's
# (5 numbers for bandwidth, 9 for latency) and starts with SIZE ITERS; prints it.
PERFTEST_PARSE='
import sys
size, iters = int(sys.argv[1]), int(sys.argv[2])
lines = sys.stdin.read().splitlines()
for i, l in enumerate(lines):
    if not l.strip().startswith("#bytes"):
        continue
    for r in lines[i + 1:]:
        if r.strip() and set(r.strip()) <= {"-"}:
            continue
        try:
            cols = [float(c) for c in r.split()]
        except ValueError:
            break
        if len(cols) in (5, 9) and cols[0] == size and cols[1] == iters:
            print(" ".join(r.split()))
            sys.exit(0)
        break
sys.exit(1)
'
perftest_result() { python3 -c "$PERFTEST_PARSE" "$2" "$3" <<< "$1"; }

# A pingpong under loss has one ending no transport can repair: the guest's ACK of roce's last
# SEND is lost after the guest, its 100 iterations done, has destroyed its QP, so roce's resends
# go unanswered until its retry count runs out (real NICs behave the same). Recognised only with
# the evidence: the guest finished clean, roce's one error is RetryExcErr with exactly that send
# outstanding, and the capture (taken before roce's injector) holds the guest's ACK of the PSN of
# roce's last SEND. Prints that ACK's frame; fails otherwise.
last_ack_lost() { # last_ack_lost NAME
    local ours theirs
    [ "$GRC" = 0 ] && echo "$GOUT" | grep -q "100 iters" || return 1
    echo "$GOUT$ROUT" | grep -qi "invalid data" && return 1
    echo "$ROUT" | grep -qE "Failed status RetryExcErr for wr_id [0-9]+ after 99 sends and 100 receives of 100" || return 1
    ours=$(echo "$ROUT" | grep -oE 'local address: +LID 0x[0-9a-f]+, QPN 0x[0-9a-f]+' | grep -oE '[0-9a-f]+$' | head -1)
    theirs=$(echo "$ROUT" | grep -oE 'remote address: +LID 0x[0-9a-f]+, QPN 0x[0-9a-f]+' | grep -oE '[0-9a-f]+$' | head -1)
    [ -n "$ours" ] && [ -n "$theirs" ] || return 1
    "$ROCE_BIN" pcap check --json "$RESULTS/pcaps/$1.pcap" 2> /dev/null | python3 -c '
import json, sys
ours, theirs = int(sys.argv[1], 16), int(sys.argv[2], 16)
frames = [json.loads(l) for l in sys.stdin if l.startswith("{\"frame\"")]
frames = [f for f in frames if f.get("roce")]
# SEND opcodes 0x00-0x05 towards the guest: roce'"'"'s sends; the last one ends its final message.
sends = [f for f in frames if f["dest_qpn"] == theirs and f["opcode"] <= 5]
if not sends:
    sys.exit(1)
psn = sends[-1]["psn"]
acks = [f for f in frames if f["dest_qpn"] == ours and f["opcode"] == 17 and f["psn"] == psn]
if not acks:
    sys.exit(1)
print("frame %d: the guest ACKed PSN %d (roce'"'"'s last SEND) after finishing" % (acks[0]["frame"], psn))
' "$ours" "$theirs"
}

pingpong_check() { # pingpong_check client|server SIZE [EXTRA ROCE ARGS]
    local role=$1 size=$2 name="roce_pingpong_${1}_$2" t0 lost; shift 2
    [ "$#" -gt 0 ] && name="roce_faults_pingpong_$role"
    roce_has pingpong || { record "$name" FAIL "this roce has no \`pingpong\` (build it with DPDK)"; return; }
    t0=$(now)
    roce_pair "$name" 18515 "$role" "ibv_rc_pingpong -d rxe0 -g 1 -s $size -m 1024 -n 100 -c @HOST@" \
        pingpong -s "$size" -m 1024 -n 100 -c "$@"
    local cond='echo "$ROUT" | grep -q "100 iters" && echo "$GOUT" | grep -q "100 iters" && ! echo "$GOUT$ROUT" | grep -qi "invalid data"'
    local detail="$size B x 100, -c clean both sides"
    if [ "$#" -gt 0 ] && [ "$RRC" != 0 ] && lost=$(last_ack_lost "$name"); then
        # Judged on what the loss left (last_ack_lost checked the guest's run and the capture).
        RRC=0 cond=true
        detail="$size B x 100; the guest finished clean, roce completed 99 sends and 100 receives: $lost; roce's injector dropped it"
    fi
    judge "$name" "$t0" 100 "$cond" \
        "$detail$( [ "$#" -gt 0 ] && echo "; $(echo "$ROUT" | grep -oE 'retransmitted_packets=[0-9]+|duplicate_request=[0-9]+|faults: tx dropped=[0-9/]+|rx dropped=[0-9/]+' | tr '\n' ' ')")"
}
check_roce_pingpong_client() { pingpong_check client 64; pingpong_check client 8192; }
check_roce_pingpong_server() { pingpong_check server 64; pingpong_check server 8192; }

perftest_check() { # perftest_check client|server TOOL SIZE ITERS [EXTRA ROCE ARGS]
    local role=$1 tool=$2 size=$3 iters=$4 t0 test name rline gline min; shift 4
    test=${tool#ib_}; test=${test//_/-}
    name="roce_${tool#ib_}_${role}_$size"
    [ "$#" -gt 0 ] && name="roce_faults_${tool#ib_}_$role"
    roce_has perf || { record "$name" FAIL "this roce has no \`perf\` (build it with DPDK)"; return; }
    t0=$(now)
    roce_pair "$name" 18515 "$role" "$tool -d rxe0 -x 1 -F -s $size -n $iters @HOST@" \
        perf "$test" --peer-format perftest -s "$size" -n "$iters" -u "$QP_TIMEOUT" "$@"
    rline=$(perftest_result "$ROUT" "$size" "$iters") || rline=""
    gline=$(perftest_result "$GOUT" "$size" "$iters") || gline=""
    min=$(( iters / 2 ))
    local cond='[ -n "$rline" ] && [ -n "$gline" ]' extra=""
    if [ "$#" -gt 0 ]; then
        # Recovery: the injector dropped frames both ways and roce's counters show the repair.
        cond="$cond"' && echo "$ROUT" | grep -qE "faults: tx dropped=[1-9][0-9]*/[0-9]+ .* rx dropped=[1-9]" && retrans_seen'
        extra="; $(echo "$ROUT" | grep -E '^(counters|faults):' | grep -oE '(retransmitted_packets|packet_seq_err|local_ack_timeout_err|out_of_sequence|duplicate_request|tx dropped|rx dropped)=[0-9/]+' | tr '\n' ' ')"
    fi
    judge "$name" "$t0" "$min" "$cond" "roce: $rline | rxe: $gline$extra"
}
# roce's local ACK timeout exponent against rxe: 16 = 268 ms. perftest's 14 (67 ms) is shorter
# than rxe under TCG on a loaded host takes to answer eight 64 KiB READs; each spurious timeout
# then queues the READs again and rxe falls further behind until retry_cnt runs out.
QP_TIMEOUT=${QP_TIMEOUT:-16}
retrans_seen() { # roce's counters show retransmissions (as requester) or repaired gaps (as responder)
    echo "$ROUT" | grep -E '^counters:' | grep -qE '(retransmitted_packets|packet_seq_err|local_ack_timeout_err|out_of_sequence|duplicate_request)=[1-9]'
}
check_roce_perftest_bw() {
    local role tool size
    for role in client server; do
        for tool in ib_write_bw ib_read_bw ib_send_bw; do
            for size in 64 65536; do perftest_check "$role" "$tool" "$size" 200; done
        done
    done
}
check_roce_perftest_lat() {
    local role
    for role in client server; do
        perftest_check "$role" ib_send_lat 2 100
        perftest_check "$role" ib_write_lat 2 100
    done
}

check_roce_faults() {
    local role
    for role in client server; do
        perftest_check "$role" ib_write_bw 4096 200 --loss 0.02 --seed 7
        perftest_check "$role" ib_read_bw 4096 200 --loss 0.02 --seed 8
        pingpong_check "$role" 8192 --loss 0.02 --seed 9
    done
}

# rc_verbs_peer.py: immediates (the script writes 0x11223344 + wr_id and 0x55667700 + wr_id) and
# atomics on a target starting at 100 (FETCH_ADD 5 -> 105, CMP_SWAP 105 -> 7).
VERBS_IMMS="0x11223345 0x55667702 0x55667703 0x11223348"
imms_in() { local i; for i in $VERBS_IMMS; do echo "$1" | grep -q "imm_data(host u32)=$i" || return 1; done; }
verbs_check() { # verbs_check client|server NAME_SUFFIX 'extra script args' [EXTRA ROCE ARGS]
    local role=$1 name=$2 sargs=$3 gcmd; shift 3
    VT0=$(now)
    if [ "$role" = client ]; then gcmd="python3 /mnt/host/rc_verbs_peer.py server $sargs"
    else gcmd="python3 /mnt/host/rc_verbs_peer.py client @HOST@ $sargs"; fi
    roce_pair "$name" 18516 "$role" "$gcmd" perf verbs-peer "$@"
    if [ "$role" = client ]; then VSRV=$GOUT; VCLI=$ROUT; else VSRV=$ROUT; VCLI=$GOUT; fi
}
VCOND='imms_in "$VSRV" && echo "$VSRV" | grep -q "atomic target now 7" && echo "$VCLI" | grep -q "fetch_add:5: .*original=100" && echo "$VCLI" | grep -q "cmp_swap:7: .*original=105"'
check_roce_verbs() {
    local role
    for role in client server; do
        roce_has perf || { record "roce_verbs_$role" FAIL "this roce has no \`perf\` (build it with DPDK)"; continue; }
        verbs_check "$role" "roce_verbs_$role" ""
        judge "roce_verbs_$role" "$VT0" 20 "$VCOND" "imm $VERBS_IMMS, atomics 100 -> 105 -> 7"
    done
}

# ECN: rxe's QP sends ECT(0) (traffic class 2); nftables on br-rxe rewrites ECN to CE on RoCE
# frames towards veth-br (roce); roce counts them and answers with CNPs, which rxe ignores.
ce_mark() { # ce_mark on|off
    if [ "$1" = on ]; then
        ip netns exec "$NS" nft add table bridge roce_ce &&
        ip netns exec "$NS" nft add chain bridge roce_ce cemark '{ type filter hook forward priority 0; }' &&
        ip netns exec "$NS" nft add rule bridge roce_ce cemark oifname "veth-br" udp dport 4791 ip ecn set ce
    else
        ip netns exec "$NS" nft delete table bridge roce_ce 2>/dev/null || true
    fi
}
check_roce_ecn() {
    local role name
    command -v nft > /dev/null || { record roce_ecn_client FAIL "nft (nftables) is not installed"; record roce_ecn_server FAIL "nft (nftables) is not installed"; return; }
    for role in client server; do
        name="roce_ecn_$role"
        ce_mark off
        ce_mark on || { record "$name" FAIL "nft could not install the CE-marking rule"; continue; }
        # Captured on the bridge (CNPs) and where roce is attached, after the bridge rewrote ECN
        # (<name>-delivered.pcap: the CE marks roce received). As the client, roce also
        # READs: CE on rxe's READ responses (the data flows back to us) is what calls for CNPs.
        local ops=()
        [ "$role" = client ] && ops=(--ops "send_imm:64,write_imm:64,write_imm:8192,send_imm:8192,fetch_add:5,cmp_swap:7,read:8192")
        CAPTURE_IF=veth-host start_capture "$name-delivered" "udp port 4791"
        local ce_cap=$CAPTURE_PID
        verbs_check "$role" "$name" "--tclass 2" "${ops[@]}"
        stop_capture "$ce_cap"
        ce_mark off
        # rxe sends no CNPs and carries on: the transfer completes, roce counted CE and sent CNPs.
        judge "$name" "$VT0" 10 \
            "$VCOND"' && echo "$ROUT" | grep -E "^counters:" | grep -qE "np_ecn_marked_roce_packets=[1-9]" && echo "$ROUT" | grep -E "^counters:" | grep -qE "np_cnp_sent=[1-9]" && ce_in_pcap "$name"' \
            "$(echo "$ROUT" | grep -E '^counters:' | grep -oE '(np_ecn_marked_roce_packets|np_cnp_sent)=[0-9]+' | tr '\n' ' ')"
    done
}
ce_in_pcap() { # roce received CE-marked RoCE frames and sent CNPs (opcode 0x81) to rxe
    local f="$RESULTS/pcaps/$1.pcap" d="$RESULTS/pcaps/$1-delivered.pcap"
    [ "$(tcpdump -nr "$d" 'udp port 4791 and (ip[1] & 3) == 3' 2>/dev/null | wc -l)" -gt 0 ] &&
    [ "$(tcpdump -nr "$f" 'src host 198.18.0.2 and udp port 4791 and udp[8] == 0x81' 2>/dev/null | wc -l)" -gt 0 ]
}
# ==== end of the roce section ===============================================================

main() {
    log "results in $RESULTS"
    setup_deps
    setup_image
    setup_roce
    boot_guests
    local c
    for c in $CHECKS; do
        log "check $c"
        "check_$c" || record "$c" FAIL "check aborted (see logs)"
    done
    log "summary:"; cat "$SUMMARY" >&2
    [ "$FAILED" = 0 ]
}
# On one line, so bash has read the whole file before anything runs (editing the script during
# a run cannot change what the running shell executes next).
main "$@"; exit $?
