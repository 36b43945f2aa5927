#!/usr/bin/env bash
# The project's test command (the README's second command and what CI runs): formatting, lints,
# the full test suite with DPDK, the sans-IO core without DPDK, and a compile check of the benches.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/setup.sh"
export CARGO_TERM_COLOR=never
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --no-default-features --all-targets -- -D warnings
echo "== cargo test (without DPDK: the sans-IO core)"
cargo test --no-default-features
echo "== cargo test (everything, with DPDK)"
cargo test --workspace
echo "== benches compile"
cargo bench --workspace --no-run
echo "== fuzz targets compile (running them needs nightly: cargo +nightly fuzz run endpoint)"
(cd fuzz && cargo check --quiet)
if cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== fuzz: 20 s per target"
    for target in parse_frame endpoint host; do
        (cd fuzz && cargo +nightly fuzz run "$target" -- -max_total_time=20)
    done
fi
