//! A retired QP (the fabric's flows retire theirs when done): a late packet for it is counted
//! apart from packets for QPs that never were, and its counters stay in the endpoint's totals.

use roce_proto::connect::{connect_rc, RcOptions};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::time::Instant;
use roce_proto::verbs::{AccessFlags, RecvWr, SendWr, Sge, WrOpcode};
use roce_proto::wire::EthernetAddress;

#[test]
fn a_packet_for_a_retired_qp_is_counted_apart_and_its_counters_stay_in_the_totals() {
    let ep = |last: u8| {
        let mut cfg = EndpointConfig::ipv4(
            EthernetAddress([2, 0, 0, 0, 0, last]),
            std::net::Ipv4Addr::new(198, 18, 0, last),
        );
        // The stray frame below is edited without its ICRC.
        cfg.verify_icrc = false;
        Endpoint::new(cfg)
    };
    let (mut a, mut b) = (ep(1), ep(2));
    let (sa, sb) = connect_rc(&mut a, &mut b, &RcOptions::default()).unwrap();
    let src = a.reg_mr(sa.pd, 64, AccessFlags::LOCAL_WRITE);
    let dst = b.reg_mr(sb.pd, 64, AccessFlags::LOCAL_WRITE);
    let sge = |mr: roce_proto::mr::MrInfo| Sge {
        addr: mr.addr,
        length: 64,
        lkey: mr.lkey,
    };
    b.post_recv(sb.qpn, RecvWr::new(1, sge(dst))).unwrap();
    for id in [1, 2] {
        a.post_send(sa.qpn, SendWr::new(id, WrOpcode::Send, sge(src)))
            .unwrap();
    }
    let now = Instant::ZERO;
    let mut buf = vec![0; 2048];
    let mut frame = || {
        let n = a.poll_transmit(now, &mut buf).unwrap();
        buf[..n].to_vec()
    };
    let (first, second) = (frame(), frame());
    b.handle_frame(now, &first);
    assert_eq!(b.counters().qp.rx_send_requests, 1);
    b.retire_qp(sb.qpn).unwrap();
    b.handle_frame(now, &second);
    let c = b.counters();
    assert_eq!((c.drops.retired_qp, c.drops.unknown_qp), (1, 0));
    // The retired QP's counters are still the endpoint's.
    assert_eq!(c.qp.rx_send_requests, 1);
    // A QPN never held is unknown, not retired (the BTH follows Ethernet, IPv4 and UDP).
    let mut stray = second.clone();
    stray[42 + 5..42 + 8].copy_from_slice(&[0, 0, 99]);
    b.handle_frame(now, &stray);
    assert_eq!(b.counters().drops.unknown_qp, 1);
}
