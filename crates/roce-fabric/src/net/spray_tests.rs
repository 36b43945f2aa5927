//! Unit tests of [`super`]: the port sets, per packet and per flowlet, and the ICRC.

use super::*;
use roce_proto::psn::Psn;
use roce_proto::wire::{
    bth, ethernet, parse_frame, Ecn, EtherType, EthernetAddress, ExtRepr, IpRepr, Opcode, RoceRepr,
};
use std::net::IpAddr;

/// A SEND Only of 37 bytes from 10.0.0.1 to `dst`, QP `qpn`, source port 0xc123.
fn frame(dst: &str, qpn: u32) -> Vec<u8> {
    let (src, dst): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), dst.parse().unwrap());
    let repr = RoceRepr {
        eth: ethernet::Repr {
            dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src: EthernetAddress([2, 0, 0, 0, 0, 1]),
            vlan: None,
            ethertype: if dst.is_ipv4() {
                EtherType::Ipv4
            } else {
                EtherType::Ipv6
            },
        },
        ip: IpRepr::new_roce(src_for(src, dst), dst, 26, Ecn::Ect0),
        udp_src_port: 0xc123,
        bth: bth::Repr {
            opcode: Opcode::RC_SEND_ONLY,
            dest_qpn: qpn,
            psn: Psn::new(5),
            pkey: 0xffff,
            ..bth::Repr::default()
        },
        ext: ExtRepr::default(),
        payload_len: 37,
    };
    let mut buf = vec![0u8; repr.frame_len()];
    let n = repr.emit(&[7u8; 37], &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// `src`, or an IPv6 source when `dst` is IPv6.
fn src_for(src: IpAddr, dst: IpAddr) -> IpAddr {
    if dst.is_ipv4() {
        src
    } else {
        "fd00::1".parse().unwrap()
    }
}

fn at(us: u64) -> Instant {
    Instant::from_nanos(us * 1000)
}

#[test]
fn per_packet_spraying_cycles_the_qps_ports_and_keeps_the_icrc_valid() {
    let mut s = Sprayer::new(Spray {
        paths: 3,
        flowlet_us: 0.0,
    });
    let want = [0, 1, 2, 0, 1].map(|k| port_of(0xc123, k));
    assert_eq!(want[0], 0xc123);
    assert!(want[1] != want[0] && want[2] != want[0] && want[1] != want[2]);
    for dst in ["10.0.0.2", "fd00::2"] {
        for (i, &port) in want.iter().enumerate() {
            let mut f = frame(dst, 17);
            assert_eq!(
                s.apply(at(i as u64), &mut f),
                Some(port),
                "{dst} packet {i}"
            );
            let p = parse_frame(&f).expect("the ICRC covers the new port");
            assert_eq!((p.repr.udp_src_port, p.payload), (port, &[7u8; 37][..]));
        }
    }
    // Another QP (destination QPN) starts its own cycle at its own port.
    let mut f = frame("10.0.0.2", 18);
    assert_eq!(s.apply(at(9), &mut f), Some(0xc123));
    // Not RoCEv2 (a UDP checksum set, or too short): left alone.
    let mut f = frame("10.0.0.2", 17);
    let l4 = 14 + 20;
    f[l4 + 6] = 1;
    let before = f.clone();
    assert_eq!(s.apply(at(10), &mut f), None);
    assert_eq!(f, before);
    assert_eq!(s.apply(at(10), &mut before.clone()[..30]), None);
}

#[test]
fn flowlets_change_port_only_after_a_gap_longer_than_the_timeout() {
    let mut s = Sprayer::new(Spray {
        paths: 4,
        flowlet_us: 5.0,
    });
    let mut send = |us| s.apply(at(us), &mut frame("10.0.0.2", 17));
    let p = |k| Some(port_of(0xc123, k));
    // Back to back: one port; a gap of exactly 5 us does not start a flowlet, 6 us does.
    assert_eq!([send(0), send(1), send(3), send(8)], [p(0); 4]);
    assert_eq!([send(14), send(15), send(30)], [p(1), p(1), p(2)]);
    assert_eq!([send(40), send(50)], [p(3), p(0)]);
}

#[test]
fn settings_need_two_paths_and_a_finite_gap() {
    let ok = Spray {
        paths: 2,
        flowlet_us: 0.0,
    };
    assert_eq!(ok.check(), Ok(()));
    let one = Spray { paths: 1, ..ok };
    assert_eq!(one.check(), Err("spray.paths is 1: at least 2".into()));
    let nan = Spray {
        flowlet_us: f64::NAN,
        ..ok
    };
    assert!(nan.check().is_err_and(|e| e.contains("flowlet_us is NaN")));
}
