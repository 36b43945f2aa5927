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
