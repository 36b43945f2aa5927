//! Fuzzes an endpoint against a hostile peer: the input is a sequence of actions (peer frames with
//! valid ICRCs, posts, polls, timers, region churn), decoded and checked exactly as the
//! stable-toolchain proptest in roce-proto's `tests/it/hostile_props.rs` does; any invariant broken
//! is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

use roce_testkit::hostile_peer;
fuzz_target!(|data: &[u8]| {
    hostile_peer::Harness::run_bytes(data).unwrap_or_else(|e| panic!("{e}"));
});
