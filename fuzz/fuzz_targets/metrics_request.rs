//! Fuzzes the metrics endpoint's request-head parser (what `--metrics` clients send first).
//! The contract is the one tests/it/metrics_request_props.rs checks on stable
//! (roce_testkit::metrics_request_invariants): no panic, nothing read past the head limit, a
//! complete head within it, an error answered 400 or 431 with one short line.
#![no_main]

use roce_testkit::metrics_request_invariants;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| metrics_request_invariants::request_head(data));
