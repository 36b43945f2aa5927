//! Fuzzes a host's ARP, NDP and INT frame paths: the input is a sequence of actions (frames from
//! hostile neighbours, whole or damaged, lookups, timers, drains), decoded and checked exactly as
//! the stable-toolchain proptest `tests/hostile_props.rs` does; any invariant broken is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/hostile_host.rs"]
mod hostile_host;

fuzz_target!(|data: &[u8]| {
    let actions = hostile_host::Action::decode_all(data);
    if let Err(e) = hostile_host::HostHarness::run(&actions) {
        panic!("{e}");
    }
});
