//! One of each operation over a clean link: the bytes land and every WR completes once.

use roce_testkit::rc;

use rc::*;
use roce_proto::connect::RcOptions;
use roce_proto::fault::FaultConfig;
use roce_proto::verbs::{RecvWr, Sge, WcOpcode, WcStatus, WrOpcode};

#[test]
fn write_read_send_and_atomics_complete_over_a_clean_link() {
    let mut p = pair(FaultConfig::default(), 1);
    let (sa, sb) = connect(&mut p, &RcOptions::default());
    let src = mr(&mut p.a, &sa, 10_000, 7);
    let dst = mr(&mut p.b, &sb, 10_000, 0);
    let sge = |m: &roce_proto::mr::MrInfo, off: u64, len: u32| Sge {
        addr: m.addr + off,
        length: len,
        lkey: m.lkey,
    };
    let read = WrOpcode::RdmaRead {
        remote_addr: dst.addr + 100,
        rkey: dst.rkey,
    };
    let imm = WrOpcode::SendWithImm { imm: 0xdead_beef };
    let fetch_add = WrOpcode::AtomicFetchAndAdd {
        remote_addr: dst.addr + 8000,
        rkey: dst.rkey,
        add: 5,
    };
    p.a.post_send(sa.qpn, write_wr(1, &src, &dst, 5000))
        .unwrap();
    p.a.post_send(sa.qpn, send_wr(2, read, &src, 6000, 3000))
        .unwrap();
    p.b.post_recv(sb.qpn, RecvWr::new(10, sge(&dst, 9000, 1000)))
        .unwrap();
    p.a.post_send(sa.qpn, send_wr(3, imm, &src, 0, 700))
        .unwrap();
    p.a.post_send(sa.qpn, send_wr(4, fetch_add, &src, 9000, 8))
        .unwrap();
    let mut wa = Vec::new();
    let mut wb = Vec::new();
    let end = deadline(&p, 1);
    let ok = p.run_until(end, |_, a, b| {
        drain(a, &sa, &mut wa);
        drain(b, &sb, &mut wb);
        wa.len() == 4 && wb.len() == 1
    });
    assert!(ok, "timed out: {wa:?} {wb:?}");
    assert_eq!(
        wa.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![
            (1, WcStatus::Success),
            (2, WcStatus::Success),
            (3, WcStatus::Success),
            (4, WcStatus::Success)
        ]
    );
    assert_eq!(
        (wb[0].wr_id, wb[0].opcode, wb[0].byte_len, wb[0].imm_data),
        (10, WcOpcode::Recv, 700, Some(0xdead_beef))
    );
    let a = p.a.mr(src.lkey).unwrap().bytes().to_vec();
    let b = p.b.mr(dst.lkey).unwrap().bytes().to_vec();
    assert_eq!(&b[..5000], &a[..5000]);
    assert_eq!(&a[6000..9000], &b[100..3100]);
    assert_eq!(&b[9000..9700], &a[..700]);
}

#[test]
fn ipv6_endpoints_move_a_multi_packet_send() {
    use roce_proto::connect::connect_rc;
    use roce_proto::endpoint::{Endpoint, EndpointConfig};
    use roce_proto::loopback::{loopback_pair, EndpointPair};
    let v6 = |mac, ip: &str| {
        let mut c = EndpointConfig::ipv4(mac, std::net::Ipv4Addr::UNSPECIFIED);
        c.ipv4 = None;
        c.ipv6 = Some(ip.parse().unwrap());
        Endpoint::new(c)
    };
    let (pa, pb) = loopback_pair(9000, 1024);
    let mut p = EndpointPair::new(v6(MAC_A, "2001:db8::11"), v6(MAC_B, "2001:db8::12"), pa, pb);
    let (sa, sb) = connect_rc(&mut p.a, &mut p.b, &RcOptions::default()).unwrap();
    let src = mr(&mut p.a, &sa, 3000, 9);
    let dst = mr(&mut p.b, &sb, 3000, 0);
    p.b.post_recv(
        sb.qpn,
        RecvWr::new(
            5,
            Sge {
                addr: dst.addr,
                length: 3000,
                lkey: dst.lkey,
            },
        ),
    )
    .unwrap();
    p.a.post_send(sa.qpn, send_wr(6, WrOpcode::Send, &src, 0, 3000))
        .unwrap();
    let mut got = Vec::new();
    let end = p.now + roce_proto::time::Duration::from_secs(1);
    assert!(p.run_until(end, |_, a, b| {
        got.extend(a.poll_cq_one(sa.cq));
        got.extend(b.poll_cq_one(sb.cq));
        got.len() == 2
    }));
    assert!(got.iter().all(|w| w.status == WcStatus::Success));
    assert_eq!(
        p.a.mr(src.lkey).unwrap().bytes(),
        p.b.mr(dst.lkey).unwrap().bytes()
    );
    assert_eq!(p.b.counters().qp.rx_send_requests, 1);
}

#[test]
fn busy_qps_take_turns_and_an_idle_qp_wakes_on_post() {
    use roce_proto::time::Instant;
    let mut p = pair(FaultConfig::default(), 1);
    let qps: Vec<_> = (0..3)
        .map(|_| connect(&mut p, &RcOptions::default()))
        .collect();
    // Each QP has its own PD: register its buffers per QP.
    let write = |p: &mut Pair, i: usize, id: u64| {
        let (sa, sb) = qps[i];
        let src = mr(&mut p.a, &sa, 64, 7);
        let dst = mr(&mut p.b, &sb, 64, 0);
        p.a.post_send(sa.qpn, write_wr(id, &src, &dst, 64)).unwrap();
    };
    for id in 0..3 {
        write(&mut p, 0, id);
        write(&mut p, 2, id);
    }
    let mut buf = [0u8; 2048];
    let mut dest = |p: &mut Pair| {
        let n = p.a.poll_transmit(Instant::ZERO, &mut buf)?;
        let f = roce_proto::wire::parse_frame(&buf[..n]).ok()?;
        Some(f.repr.bth.dest_qpn)
    };
    let order: Vec<u32> = std::iter::from_fn(|| dest(&mut p)).collect();
    let (q0, q2) = (qps[0].1.qpn, qps[2].1.qpn);
    assert_eq!(order, [q0, q2, q0, q2, q0, q2]);
    // Nothing left: the QPs went idle; a post wakes QP 1 alone.
    write(&mut p, 1, 9);
    let order: Vec<u32> = std::iter::from_fn(|| dest(&mut p)).collect();
    assert_eq!(order, [qps[1].1.qpn]);
}

#[test]
fn an_armed_cq_that_gets_a_completion_is_one_event_until_armed_again() {
    let mut p = pair(FaultConfig::default(), 1);
    let (s1, d1) = connect(&mut p, &RcOptions::default());
    let (s2, _) = connect(&mut p, &RcOptions::default());
    let src = mr(&mut p.a, &s1, 64, 7);
    let dst = mr(&mut p.b, &d1, 64, 0);
    p.a.req_notify_cq(s1.cq).unwrap();
    p.a.req_notify_cq(s2.cq).unwrap();
    assert_eq!(p.a.cq_events().count(), 0);
    let end = deadline(&p, 1);
    let mut events = Vec::new();
    p.a.post_send(s1.qpn, write_wr(1, &src, &dst, 64)).unwrap();
    let ok = p.run_until(end, |_, a, _| {
        events.extend(a.cq_events());
        !events.is_empty()
    });
    assert!(ok, "no completion event");
    // Only the CQ that got the completion, once; the completion is still there to poll.
    assert_eq!(events, [s1.cq]);
    assert_eq!(p.a.poll_cq_one(s1.cq).map(|wc| wc.wr_id), Some(1));
    // Disarmed by its event: the next completion is no event.
    p.a.post_send(s1.qpn, write_wr(2, &src, &dst, 64)).unwrap();
    let ok = p.run_until(end, |_, a, _| a.qp(s1.qpn).unwrap().send_queue_len() == 0);
    assert!(ok, "second write did not complete");
    assert_eq!(p.a.cq_events().count(), 0);
    // Arming a CQ that holds a completion queues its event at once.
    p.a.req_notify_cq(s1.cq).unwrap();
    assert_eq!(p.a.cq_events().collect::<Vec<_>>(), [s1.cq]);
    assert_eq!(p.a.poll_cq_one(s1.cq).map(|wc| wc.wr_id), Some(2));
}

#[test]
fn a_new_qp_reserves_no_queue_entries_and_a_used_one_only_what_it_used() {
    // Verbs' default depths (256 send and receive WRs): none of it is allocated up front.
    let mut p = pair(FaultConfig::default(), 1);
    let (sa, sb) = connect(&mut p, &RcOptions::default());
    let capacity = |p: &Pair| {
        (
            p.a.qp(sa.qpn).unwrap().queue_capacity(),
            p.b.qp(sb.qpn).unwrap().queue_capacity(),
        )
    };
    assert_eq!(capacity(&p), (0, 0));
    let src = mr(&mut p.a, &sa, 5000, 7);
    let dst = mr(&mut p.b, &sb, 5000, 0);
    p.a.post_send(sa.qpn, write_wr(1, &src, &dst, 5000))
        .unwrap();
    let mut wa = Vec::new();
    let end = deadline(&p, 1);
    assert!(p.run_until(end, |_, a, _| {
        drain(a, &sa, &mut wa);
        !wa.is_empty()
    }));
    assert_eq!(wa[0].status, WcStatus::Success);
    // One WR (and an RTT stamp or two) on the sender, an ACK or two queued on the receiver:
    // each queue grew to its first allocation, nowhere near its bound.
    let (a, b) = capacity(&p);
    assert!((1..=16).contains(&a), "sender reserves {a} entries");
    assert!(b <= 8, "receiver reserves {b} entries");
}
