//! DPDK integration tests of roce-dpdk, one binary: the EAL, mbufs and ports (`ports`) and the
//! poll-mode runtime over ring pairs (`runtime`). One process holds one EAL, so the binary has
//! its own runner (`harness = false`, `harness.rs`): the tests that need no EAL first, then the
//! EAL from `harness::EAL_ARGS` and every other test in sequence, printing "N passed, N failed".
//! `cargo test -p roce-dpdk --test it -- WORD` runs the tests whose name contains WORD. Needs
//! root (EAL without hugepages, namespaces, taps).

// Tests may panic: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod harness;
mod netns;
mod ports;
mod runtime;

fn main() {
    ports::child_role();
    let tests: Vec<_> = ports::TESTS.iter().chain(runtime::TESTS).copied().collect();
    harness::run(ports::BEFORE_EAL, &tests);
}
