//! Integration tests of roce-proto, one binary: the wire formats against generated frames and the
//! golden Soft-RoCE captures (`tests/vectors`), RC queue pairs packet by packet and end to end,
//! congestion control, hostile and spoofing peers. Each module holds what one behaviour needs;
//! the harnesses shared with other crates' tests and the fuzz targets come from roce-testkit.

// Tests may panic: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cc_dcqcn;
mod cc_ecn;
mod cc_marking;
mod cc_nvidia_rtt;
mod cc_pacer;
mod cc_props;
mod cc_rtt;
mod cc_schedule;
mod cc_variants;
mod cc_window;
mod hostile_props;
mod perf_ecn;
mod rc_completer;
mod rc_errors;
mod rc_hostile;
mod rc_invalidate;
mod rc_many_qps;
mod rc_random;
mod rc_responder;
mod rc_retire;
mod rc_selective;
mod rc_smoke;
mod spoofed_peer;
mod wire_props;
mod wire_strategies;
mod wire_template;
mod wire_vectors;
mod wire_view;
