#!/usr/bin/env bash
# Installs what roce needs on a fresh Debian 12 machine: DPDK 22.11 (libdpdk-dev), libclang for
# bindgen, pkg-config, make (jemalloc, the `roce` binary's allocator, builds with it), and the
# tools the tests use (iproute2, tcpdump; gcc, libibverbs-dev, ibverbs-utils and perftest for
# libroce_verbs.so and the unmodified RDMA programs it runs; prometheus, dpdk-dev, curl and
# python3 for the operations kit's check, tools/metrics-check.sh; clang and libbpf-dev build the
# XDP program of the af_xdp tests, tools/xdp/roce_steer.c).
# Idempotent and quiet.
set -euo pipefail
need=()
for pkg in libdpdk-dev dpdk libclang-dev clang libbpf-dev pkg-config make iproute2 tcpdump gcc libibverbs-dev ibverbs-utils perftest prometheus dpdk-dev curl python3; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2
    exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
