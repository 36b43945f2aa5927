//! Where the files the simulator's tests read live, for the tests of every crate: the scenarios
//! shipped at the repository's root and the HPCC-format fixtures of the root tests.
//! (`include_str!` needs a literal, so a test that embeds a scenario names it relative to itself.)

/// The shipped scenarios (`scenarios/` at the repository's root).
pub const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios");

/// The HPCC-format fixtures (`tests/fixtures/hpcc` at the repository's root).
pub const HPCC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/hpcc");
