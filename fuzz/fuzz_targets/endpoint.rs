//! Fuzzes an endpoint against a hostile peer: the input is a sequence of actions (peer frames
//! with valid ICRCs, posts, polls, timers, region churn), decoded and checked exactly as the
//! stable-toolchain proptest `tests/hostile_props.rs` does; any invariant broken is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/hostile_peer.rs"]
mod hostile_peer;

fuzz_target!(|data: &[u8]| {
    let actions = hostile_peer::Action::decode_all(data);
    if let Err(e) = hostile_peer::Harness::run(&actions) {
        panic!("{e}");
    }
});
