//! DSCP, ECN and 802.1Q PCP on every frame an endpoint emits, per traffic class: data DSCP 26
//! with ECT(0) by default (ECT(1) / Not-ECT configurable), ACKs in the data class but not
//! ECN-capable, CNPs DSCP 48 and priority 6, as NVIDIA NICs ship. Checked on the raw bytes.

use roce_testkit::cc_pair;

use cc_pair::Pair;
use roce_proto::connect::RcOptions;
use roce_proto::ecn::Marking;
use roce_proto::endpoint::EndpointConfig;
use roce_proto::time::Instant;
use roce_proto::wire::{parse_frame, set_frame_ecn, Ecn, Opcode};

struct Frames {
    data: Vec<u8>,
    ack: Vec<u8>,
    cnp: Vec<u8>,
}

/// One WRITE from a to b, CE-marked on the way: b answers with a CNP and an ACK.
fn exchange(marking: Marking) -> Frames {
    let cfg = |i: u8| EndpointConfig {
        marking,
        ..cc_pair::config(i)
    };
    let mut p = Pair::new(cfg, &RcOptions::default(), 4096);
    p.post_write(1, 100);
    let (a, b, sa) = (&mut p.a, &mut p.b, p.sa);
    let now = Instant::from_nanos(1_000);
    let mut buf = vec![0u8; 4096];
    let n = a.poll_transmit(now, &mut buf).unwrap();
    let data = buf[..n].to_vec();
    let mut marked = data.clone();
    set_frame_ecn(&mut marked, Ecn::Ce).unwrap();
    b.handle_frame(now, &marked);
    let n = b.poll_transmit(now, &mut buf).unwrap();
    let cnp = buf[..n].to_vec();
    let n = b.poll_transmit(now, &mut buf).unwrap();
    let ack = buf[..n].to_vec();
    assert_eq!(b.poll_transmit(now, &mut buf), None);
    assert_eq!(
        parse_frame(&data).unwrap().repr.bth.opcode,
        Opcode::RC_RDMA_WRITE_ONLY
    );
    assert_eq!(parse_frame(&cnp).unwrap().repr.bth.opcode, Opcode::CNP);
    assert_eq!(parse_frame(&cnp).unwrap().repr.bth.dest_qpn, sa.qpn);
    assert_eq!(
        parse_frame(&ack).unwrap().repr.bth.opcode,
        Opcode::RC_ACKNOWLEDGE
    );
    Frames { data, ack, cnp }
}

/// The IPv4 TOS byte of an untagged (offset 15) or tagged (offset 19) frame.
fn tos(frame: &[u8]) -> u8 {
    match [frame[12], frame[13]] {
        [0x81, 0x00] => frame[19],
        _ => frame[15],
    }
}

#[test]
fn default_marking_is_dscp_26_ect0_for_data_and_dscp_48_for_cnps_untagged() {
    let f = exchange(Marking::default());
    assert_eq!(tos(&f.data), (26 << 2) | 0b10);
    assert_eq!(tos(&f.ack), 26 << 2);
    assert_eq!(tos(&f.cnp), 48 << 2);
    for frame in [&f.data, &f.ack, &f.cnp] {
        assert_eq!(&frame[12..14], &[0x08, 0x00], "untagged IPv4");
    }
}

#[test]
fn data_ecn_is_configurable_to_ect1_and_not_ect() {
    let ect1 = exchange(Marking {
        data_ecn: Ecn::Ect1,
        ..Marking::default()
    });
    assert_eq!(tos(&ect1.data), (26 << 2) | 0b01);
    let not_ect = exchange(Marking {
        data_ecn: Ecn::NotEct,
        data_dscp: 34,
        cnp_dscp: 46,
        ..Marking::default()
    });
    assert_eq!(tos(&not_ect.data), 34 << 2);
    assert_eq!(tos(&not_ect.ack), 34 << 2);
    assert_eq!(tos(&not_ect.cnp), 46 << 2);
}

#[test]
fn a_configured_vlan_tags_data_and_acks_with_priority_3_and_cnps_with_priority_6() {
    let f = exchange(Marking {
        vlan: Some(100),
        ..Marking::default()
    });
    let tci = |frame: &[u8]| {
        assert_eq!(&frame[12..14], &[0x81, 0x00]);
        assert_eq!(&frame[16..18], &[0x08, 0x00]);
        u16::from_be_bytes([frame[14], frame[15]])
    };
    assert_eq!(tci(&f.data), (3 << 13) | 100);
    assert_eq!(tci(&f.ack), (3 << 13) | 100);
    assert_eq!(tci(&f.cnp), (6 << 13) | 100);
    assert_eq!(tos(&f.data), (26 << 2) | 0b10);
    assert_eq!(tos(&f.cnp), 48 << 2);
    let pcp = Marking {
        vlan: Some(7),
        data_pcp: 5,
        cnp_pcp: 7,
        ..Marking::default()
    };
    let f = exchange(pcp);
    assert_eq!(tci(&f.data), (5 << 13) | 7);
    assert_eq!(tci(&f.cnp), (7 << 13) | 7);
}

#[test]
fn an_endpoint_with_its_notification_point_off_counts_ce_and_sends_only_the_ack() {
    let cfg = |i: u8| EndpointConfig {
        np_enabled: i != 2,
        ..cc_pair::config(i)
    };
    let mut p = Pair::new(cfg, &RcOptions::default(), 4096);
    p.post_write(1, 100);
    let now = Instant::from_nanos(1_000);
    let mut buf = vec![0u8; 4096];
    let n = p.a.poll_transmit(now, &mut buf).unwrap();
    let mut marked = buf[..n].to_vec();
    set_frame_ecn(&mut marked, Ecn::Ce).unwrap();
    p.b.handle_frame(now, &marked);
    let n = p.b.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(
        parse_frame(&buf[..n]).unwrap().repr.bth.opcode,
        Opcode::RC_ACKNOWLEDGE
    );
    assert_eq!(p.b.poll_transmit(now, &mut buf), None);
    let np = p.b.np_counters();
    assert_eq!((np.np_ecn_marked_roce_packets, np.np_cnp_sent), (1, 0));
    assert_eq!(p.b.counters().qp.ecn_ce_received, 1);
    assert_eq!(p.b.counters().cnps_sent, 0);
    let r = p.b.rdma_counters();
    assert_eq!((r.np_ecn_marked_roce_packets, r.np_cnp_sent), (1, 0));
}
