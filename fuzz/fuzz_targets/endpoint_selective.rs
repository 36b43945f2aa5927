//! Fuzzes a selective-repeat endpoint against a hostile peer: the `endpoint` target's actions on
//! a QP that recovers by selective repeat, so the peer's SEND and WRITE payloads reach the
//! placement-header checks, the out-of-order window and the in-order completion (the proptest
//! `a_selective_repeat_qp_keeps_its_invariants_against_a_hostile_peer` runs the same harness).
#![no_main]

use libfuzzer_sys::fuzz_target;

use roce_proto::verbs::Recovery;
use roce_testkit::hostile_peer;
fuzz_target!(|data: &[u8]| {
    hostile_peer::Harness::run_bytes_with(Recovery::SelectiveRepeat, data)
        .unwrap_or_else(|e| panic!("{e}"));
});
