//! Fuzzes two endpoints under a spoofing attacker: the input picks the seed, the number of
//! SENDs, what the attacker forges and how long and how fast (as the proptest
//! `any_scenario_ends_delivered_or_in_error` in roce-proto's `tests/it` does), and any run that
//! wedges, completes a SEND never sent or loses data without an error is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

use roce_testkit::spoofed::pair::{run, Scenario};

fuzz_target!(|data: &[u8]| {
    if let Err(e) = run(&Scenario::from_bytes(data)) {
        panic!("{e}");
    }
});
