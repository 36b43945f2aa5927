//! # roce-testkit: what roce's tests, benches and fuzz targets share
//!
//! Harnesses and fixtures used by more than one crate's tests (or by tests and the fuzz targets),
//! so each crate's integration tests can live in that crate and still share them. It is not part
//! of the product: nothing outside tests, benches and `fuzz/` depends on it (`publish = false`).
//!
//! - [`rc`]: two endpoints on an in-memory link, a scripted peer ([`rc::script`]) and the
//!   randomized end-to-end run ([`rc::random`]); [`cc_pair`]: a connected pair for the
//!   congestion-control tests; [`work_requests`]: the work requests they post.
//! - [`hostile_peer`], [`hostile_host`]: hostile peers as state machines driven by bytes
//!   ([`action_bytes`], [`hostile_action`]), with memory the endpoint borrows
//!   ([`lent_memory`]); [`spoofed`]: two endpoints under a spoofing attacker. The property tests
//!   and the fuzz targets drive the same ones.
//! - [`vectors`]: the golden Soft-RoCE captures; [`roce_frames`]: RoCEv2 frames built for
//!   tests and benches; [`fixtures`]: the scenarios and HPCC files the simulator's tests read.
//! - `proptest_seed` (with the `proptest` feature): the property tests' printed, replayable seed.
//! - [`skip`]: the one rule for a test that cannot run here (it fails unless `ROCE_TEST_SKIP`
//!   allows the skip); [`filter`]: the test-name filter of the `harness = false` test binaries;
//!   [`perftest_output`]: reading perftest's result rows.
//! - [`cpu_median`], [`criterion_median`]: the benches' own summaries.
//! - With the `roce` feature, the contracts of the `roce` crate's decoders:
//!   `oob_invariants` (the TCP exchanges) and `metrics_request_invariants` (the metrics
//!   endpoint's request heads).
#![forbid(unsafe_code)]
// Test support: a harness that cannot go on fails the test running it by panicking, as the test
// itself would (missing_docs and the rest of [workspace.lints] still apply).
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod action_bytes;
pub mod cc_pair;
pub mod cpu_median;
pub mod criterion_median;
pub mod filter;
pub mod fixtures;
pub mod hostile_action;
pub mod hostile_host;
pub mod hostile_peer;
pub mod lent_memory;
#[cfg(feature = "roce")]
pub mod metrics_request_invariants;
#[cfg(feature = "roce")]
pub mod oob_invariants;
pub mod perftest_output;
#[cfg(feature = "proptest")]
pub mod proptest_seed;
pub mod rc;
pub mod roce_frames;
pub mod skip;
pub mod spoofed;
pub mod vectors;
pub mod work_requests;

/// The workspace's root directory (where `scenarios/`, `tools/` and the root `tests/` live).
pub const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The workspace's target directory: `CARGO_TARGET_DIR` when set, else `target/` at the root
/// (where criterion writes its estimates, whichever crate's bench runs).
pub fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(WORKSPACE).join("target"))
}
