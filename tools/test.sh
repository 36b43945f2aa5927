#!/usr/bin/env bash
# The project's test command (the README's second command and what CI runs): formatting, lints,
# the docs, the layering rules (roce-proto's dependencies, import cycles, file sizes), the full
# test suite with DPDK, the sans-IO core without DPDK, and a compile check of the benches and fuzz
# targets.
#
#   tools/test.sh          what CI runs
#   tools/test.sh --long   also the ns-3 parity runs on FB_Hadoop at 50 % load (about 15 CPU minutes)
set -euo pipefail
long=false
case "${1:-}" in
    --long) long=true ;;
    "") ;;
    *) echo "usage: tools/test.sh [--long]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
"$(dirname "$0")/setup.sh"
export CARGO_TERM_COLOR=never
# Every test runs here: none may skip for want of root or a tool (docs/contributing.md).
unset ROCE_TEST_SKIP
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --no-default-features --all-targets -- -D warnings
echo "== cargo doc -D warnings (intra-doc links resolve, no private item linked from public docs)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
RUSTDOCFLAGS="-D warnings" cargo doc --no-default-features --no-deps --quiet
echo "== layers: roce-proto depends on no DPDK, plotting, TOML, pcap or CLI crate"
if cargo tree -p roce-proto -e normal --prefix none | grep -E '^(roce-dpdk|roce-fabric|dpdk-bindings|plotters|toml|pcap-file|clap) '; then
    echo "layers: roce-proto must not depend on the crates above" >&2
    exit 1
fi
echo "== layers: roce-proto's and roce-fabric's tests and benches need neither DPDK nor the CLI"
for crate in roce-proto roce-fabric; do
    if cargo tree -p "$crate" -e normal,dev --prefix none | grep -E '^(roce|roce-dpdk|dpdk-bindings) '; then
        echo "layers: $crate's tests must not depend on the crates above" >&2
        exit 1
    fi
done
echo "== layers: no import cycles between the modules of a crate"
python3 tools/check-imports.py crates/* .
echo "== layers: no source file over 800 lines"
too_long=$(git ls-files '*.rs' '*.c' '*.py' '*.sh' | xargs wc -l | awk '$2 != "total" && $1 > 800')
if [ -n "$too_long" ]; then
    echo "files over 800 lines:" >&2
    echo "$too_long" >&2
    exit 1
fi
echo "== cargo test (without DPDK: the sans-IO core, the simulator and the CLI)"
cargo test --no-default-features -p roce -p roce-proto -p roce-fabric
echo "== cargo test (everything, with DPDK)"
cargo test --workspace
echo "== benches compile"
# Only whether they compile: the libraries they link need not be built as one LTO unit here.
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 cargo bench --workspace --no-run
echo "== the CC validation matrix over its long windows (optimised, on the bench build's dependencies)"
cargo test --profile bench -p roce-fabric --test it cc_validation -- --ignored
echo "== parity with the HPCC authors' ns-3 on their 320-host experiments (optimised; minutes)"
if $long; then
    cargo test --profile bench -p roce-fabric --test it hpcc_parity -- --ignored
else
    cargo test --profile bench -p roce-fabric --test it hpcc_parity -- --ignored --skip hadoop_50
fi
echo "== fuzz targets compile (running them needs nightly: cargo +nightly fuzz run endpoint)"
(cd fuzz && cargo check --quiet)
if cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== fuzz: 20 s per target"
    for target in parse_frame endpoint endpoint_selective host oob_pingpong oob_perftest oob_verbs_peer oob_roce_perf metrics_request spoofed_pair; do
        (cd fuzz && cargo +nightly fuzz run "$target" -- -max_total_time=20)
    done
fi
