//! Fuzzes a host's ARP, NDP and INT frame paths: the input is a sequence of actions (frames from
//! hostile neighbours, whole or damaged, lookups, timers, drains), decoded and checked exactly as
//! the stable-toolchain proptest in roce-proto's `tests/it/hostile_props.rs` does; any invariant
//! broken is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

use roce_testkit::hostile_host;
fuzz_target!(|data: &[u8]| {
    hostile_host::HostHarness::run_bytes(data).unwrap_or_else(|e| panic!("{e}"));
});
