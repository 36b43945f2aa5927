//! Fuzzes the decoder of rc_verbs_peer.py's JSON line.
//! The contract is the one tests/it/oob_props.rs checks on stable (roce_testkit::oob_invariants):
//! no panic, one short printable error line, bounded values, re-encoding to itself.
#![no_main]

use roce_testkit::oob_invariants;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| oob_invariants::verbs_peer(data));
