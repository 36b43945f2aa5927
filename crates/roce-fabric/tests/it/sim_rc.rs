//! The real RC transport (`roce_proto::endpoint::Endpoint`) on fabric hosts: WRITE flows through a
//! switch that drops (PFC off) still complete, because the transport NAKs and retransmits; with
//! PFC on nothing is dropped and nothing is retransmitted. SEND flows land in posted receives,
//! and a zero CNP interval turns the endpoints' notification points off.

use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::HostId;

// The endpoint marks its data and ACKs DSCP 26 (NVIDIA's default), so the RDMA class here is
// priority 3.
fn incast(
    pfc: bool,
) -> (
    roce_fabric::experiment::summary::RunSummary,
    roce_fabric::experiment::scenario::Built,
) {
    let text = format!(
        r#"
        name = "rc-incast"
        transport = "rc"
        seed = 3
        duration_us = 1000
        message_bytes = 65536
        topology = {{ kind = "star", hosts = 3, link = {{ gbps = 100, delay_ns = 1000 }} }}
        switch = {{ buffer_bytes = 4000000, queue_limit_bytes = 300000, lossless = [3], pfc = {pfc} }}
        workloads = [{{ kind = "incast", senders = [0, 1], receiver = 2, bytes = 2000000 }}]
        "#
    );
    let s = Scenario::from_toml(&text).unwrap();
    println!("scenario {} seed {} pfc {pfc}", s.name, s.seed);
    s.run(|_| {}).unwrap()
}

fn retransmitted(built: &roce_fabric::experiment::scenario::Built, host: usize) -> u64 {
    let rc = built.fabric.engine(HostId(host)).unwrap().as_rc().unwrap();
    rc.endpoint().counters().qp.retransmitted_packets
}

#[test]
fn rc_write_flows_complete_through_a_dropping_incast_by_retransmitting() {
    let (sum, built) = incast(false);
    assert!(sum.drops > 0, "{}", sum.table());
    for f in &sum.flows {
        assert!(f.completion_us.is_some(), "{}", sum.table());
    }
    assert!(retransmitted(&built, 0) + retransmitted(&built, 1) > 0);
    for h in 0..2 {
        let rc = built.fabric.engine(HostId(h)).unwrap().as_rc().unwrap();
        assert_eq!(rc.completed_bytes(0), 2_000_000);
        assert_eq!(rc.completion_errors(), 0);
    }
}

#[test]
fn rc_write_flows_under_pfc_lose_nothing_and_never_retransmit() {
    let (sum, built) = incast(true);
    assert_eq!(sum.drops, 0, "{}", sum.table());
    assert!(sum.pfc_pause_frames > 0);
    assert_eq!(retransmitted(&built, 0) + retransmitted(&built, 1), 0);
    // Both finish; together they needed at least 4 MB at the wire-limited rate (~345 us).
    for f in &sum.flows {
        let done = f.completion_us.unwrap_or(f64::MAX);
        assert!(done > 340.0 && done < 1000.0, "{}", sum.table());
    }
}

fn star(
    extra: &str,
    workloads: &str,
) -> (
    roce_fabric::experiment::summary::RunSummary,
    roce_fabric::experiment::scenario::Built,
) {
    let text = format!(
        r#"
        name = "rc-star"
        seed = 4
        duration_us = 500
        message_bytes = 65536
        {extra}
        topology = {{ kind = "star", hosts = 3, link = {{ gbps = 100, delay_ns = 1000 }} }}
        switch = {{ buffer_bytes = 4000000, queue_limit_bytes = 1000000, lossless = [3], ecn = {{ kmin_bytes = 1000, kmax_bytes = 2000, pmax = 1.0 }} }}
        workloads = [{workloads}]
        "#
    );
    let s = Scenario::from_toml(&text).unwrap();
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).unwrap()
}

#[test]
fn send_flows_complete_into_the_receivers_posted_receives() {
    let (sum, built) = star(
        "",
        r#"{ kind = "flow", src = 0, dst = 2, bytes = 1000000, send = true }"#,
    );
    let rc = built.fabric.engine(HostId(0)).unwrap().as_rc().unwrap();
    assert_eq!(rc.completed_bytes(0), 1_000_000, "{}", sum.table());
    assert_eq!(rc.completion_errors(), 0);
    let rx = built.fabric.engine(HostId(2)).unwrap().as_rc().unwrap();
    assert_eq!(rx.endpoint().counters().qp.rx_send_requests, 16);
}

#[test]
fn a_zero_cnp_interval_turns_the_notification_point_off() {
    let flows = r#"{ kind = "incast", senders = [0, 1], receiver = 2 }"#;
    let (on, _) = star("cnp_interval_us = 50", flows);
    let (off, _) = star("cnp_interval_us = 0", flows);
    assert!(on.ecn_marked > 0 && on.cnp_sent > 0, "{}", on.table());
    assert!(off.ecn_marked > 0, "{}", off.table());
    assert_eq!(off.cnp_sent, 0, "{}", off.table());
}

#[test]
fn a_receiver_with_its_notification_point_off_still_counts_the_ce_marks_it_gets() {
    let flows = r#"{ kind = "incast", senders = [0, 1], receiver = 2 }"#;
    let (off, built) = star("cnp_interval_us = 0", flows);
    let rx = built.fabric.engine(HostId(2)).unwrap().as_rc().unwrap();
    let ep = rx.endpoint();
    let np = ep.np_counters();
    assert!(off.ecn_marked > 0, "{}", off.table());
    // Every CE the receiver took was set by a switch (marked packets may still be queued).
    assert!(np.np_ecn_marked_roce_packets > 0 && np.np_ecn_marked_roce_packets <= off.ecn_marked);
    assert_eq!(
        ep.counters().qp.ecn_ce_received,
        np.np_ecn_marked_roce_packets
    );
    assert_eq!((np.np_cnp_sent, ep.counters().cnps_sent), (0, 0));
}
