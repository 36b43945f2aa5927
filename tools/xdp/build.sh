#!/usr/bin/env bash
# Builds roce_steer.o, the XDP program that steers only RoCEv2 to `--port af_xdp:IF`, next to
# its source (or to $1). Needs clang with the BPF target and libbpf's headers (Debian:
# clang, libbpf-dev, which tools/setup.sh installs); the af_xdp tests build it the same way.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/roce_steer.o}
multiarch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
clang -O2 -g -Wall -Werror -target bpf -I"/usr/include/$multiarch" \
    -c "$here/roce_steer.c" -o "$out"
echo "$out"
