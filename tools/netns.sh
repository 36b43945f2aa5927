#!/usr/bin/env bash
# A network namespace in which two `roce perf` (or `roce pingpong`) processes talk over DPDK
# net_tap ports joined by a kernel bridge, with 198.18.0.0/15 addresses (RFC 2544 benchmarking).
#
#   tools/netns.sh up                 namespace $NS with bridge $BR (198.18.0.254/15, for TCP)
#   tools/netns.sh attach IF...       wait (up to 10 s) for each tap IF in $NS, enslave it to $BR
#   tools/netns.sh down               delete the namespace (its bridge and taps go with it)
#   tools/netns.sh run CMD...         run CMD inside the namespace
#
# Typical use (root):
#   tools/netns.sh up
#   tools/netns.sh run roce perf write-bw --port tap:rtap0 --ip 198.18.0.1/15 &
#   tools/netns.sh attach rtap0
#   tools/netns.sh run roce perf write-bw --port tap:rtap1 --ip 198.18.0.2/15 198.18.0.254 &
#   tools/netns.sh attach rtap1; wait; tools/netns.sh down
# The DPDK processes create the taps (net_tap) inside the namespace; the kernel only bridges
# frames, and the TCP exchange uses the bridge's kernel address. Environment: NS (default
# roce-perf), BR (default rbr0).
set -euo pipefail

NS=${NS:-roce-perf}
BR=${BR:-rbr0}
KERNEL_IP=198.18.0.254/15

in_ns() { ip netns exec "$NS" "$@"; }

up() {
    ip netns del "$NS" 2>/dev/null || true
    ip netns add "$NS"
    in_ns ip link set lo up
    in_ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    in_ns ip link add "$BR" type bridge
    in_ns ip link set "$BR" type bridge stp_state 0 forward_delay 0
    in_ns ip addr add "$KERNEL_IP" dev "$BR"
    in_ns ip link set "$BR" up
}

attach() {
    local ifname i
    for ifname in "$@"; do
        for i in $(seq 100); do
            in_ns ip link show "$ifname" > /dev/null 2>&1 && break
            sleep 0.1
        done
        in_ns ip link show "$ifname" > /dev/null 2>&1 || {
            echo "netns.sh: $ifname did not appear in $NS within 10 s" >&2
            return 1
        }
        in_ns ip link set "$ifname" master "$BR"
        in_ns ip link set "$ifname" up
    done
}

down() {
    ip netns del "$NS" 2>/dev/null || true
}

case "${1:-}" in
    up) up ;;
    attach) shift; attach "$@" ;;
    down) down ;;
    run) shift; in_ns "$@" ;;
    *) echo "usage: $0 up | attach IF... | down | run CMD..." >&2; exit 2 ;;
esac
