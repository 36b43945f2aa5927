//! Property tests against hostile peers (the stable-toolchain versions of the cargo-fuzz targets
//! `endpoint` and `host`): random action sequences decoded from bytes drive an endpoint with a
//! connected QP, or a host's ARP/NDP/INT paths, and the invariants of
//! `roce_testkit::hostile_peer` and `roce_testkit::hostile_host` hold after every step.

use roce_testkit::hostile_host;
use roce_testkit::hostile_peer;

use proptest::prelude::*;
use roce_proto::verbs::Recovery;

fn bytes(max_actions: usize, width: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), width..max_actions * width)
}

/// A harness run's outcome as a proptest result (its message on failure).
fn holds(outcome: Result<(), String>) -> Result<(), TestCaseError> {
    outcome.map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn an_endpoint_keeps_its_invariants_against_a_hostile_peer(
        data in bytes(120, hostile_peer::ACTION_BYTES)
    ) {
        holds(hostile_peer::Harness::run_bytes(&data))?;
    }

    #[test]
    fn a_selective_repeat_qp_keeps_its_invariants_against_a_hostile_peer(
        data in bytes(120, hostile_peer::ACTION_BYTES)
    ) {
        holds(hostile_peer::Harness::run_bytes_with(Recovery::SelectiveRepeat, &data))?;
    }

    #[test]
    fn a_host_keeps_its_invariants_against_hostile_neighbours(
        data in bytes(120, hostile_host::ACTION_BYTES)
    ) {
        holds(hostile_host::HostHarness::run_bytes(&data))?;
    }
}

/// The harness is only as good as what it reaches: over fixed pseudo-random inputs, every kind
/// of request executes, floods overflow the queue, and regions are refused, invalidated and
/// deregistered under the peer.
#[test]
fn the_hostile_peer_reaches_every_responder_path() {
    let mut x: u64 = 0x1234_5678_9abc_def0;
    let mut total = roce_proto::counters::QpCounters::default();
    for _ in 0..100 {
        let data: Vec<u8> = (0..100 * hostile_peer::ACTION_BYTES)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut h = hostile_peer::Harness::new();
        for a in hostile_peer::Action::decode_all(&data) {
            h.step(&a).unwrap();
        }
        total.accumulate(&h.counters().qp);
        h.finish().unwrap();
    }
    let reached = [
        ("WRITE", total.rx_write_requests),
        ("READ", total.rx_read_requests),
        ("atomic", total.rx_atomic_requests),
        ("SEND", total.rx_send_requests),
        ("duplicate", total.duplicate_request),
        ("RNR NAK", total.send_rnr_err),
        ("remote access error", total.resp_remote_access_errors),
        ("queue full", total.resp_queue_full),
        ("CNP", total.rp_cnp_handled),
        ("retransmission", total.retransmitted_packets),
    ];
    for (what, n) in reached {
        assert!(n > 0, "no {what} in 100 runs: {total:?}");
    }
}
