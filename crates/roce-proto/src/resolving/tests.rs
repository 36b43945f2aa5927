use std::net::{IpAddr, Ipv4Addr};

use super::*;
use crate::connect::RcOptions;
use crate::loopback::loopback_pair;
use crate::port::{FrameBuf, Port};
use crate::psn::Psn;
use crate::verbs::{AccessFlags, QpInit, SendWr, Sge, WcStatus, WrOpcode};

const MAC_A: EthernetAddress = EthernetAddress([0x52, 0x54, 0, 0, 0, 0xa]);
const MAC_B: EthernetAddress = EthernetAddress([0x52, 0x54, 0, 0, 0, 0xb]);
const IP_A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const IP_B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

fn host(mac: EthernetAddress, ip: Ipv4Addr) -> ResolvingEndpoint {
    ResolvingEndpoint::new(EndpointConfig::ipv4(mac, ip))
}

struct Side {
    qpn: u32,
    cq: crate::verbs::CqHandle,
    pd: crate::mr::PdHandle,
}

fn qp(h: &mut ResolvingEndpoint) -> Side {
    let ep = h.endpoint_mut();
    let pd = ep.alloc_pd();
    let cq = ep.create_cq(64);
    let qpn = ep.create_qp(QpInit::shared_cq(pd, cq, 16, 16)).unwrap();
    Side { qpn, cq, pd }
}

fn peer(ip: Ipv4Addr, mac: Option<EthernetAddress>, qpn: u32) -> PeerQp {
    PeerQp {
        ip: IpAddr::V4(ip),
        mac,
        qpn,
        psn: Psn::new(100),
    }
}

/// Connects `a`'s QP `qpn` at time zero, with default options, to QP 99 at `ip` (MAC unknown).
fn connect_to_99(a: &mut ResolvingEndpoint, qpn: u32, ip: Ipv4Addr) -> Modify {
    a.connect_qp(
        Instant::ZERO,
        qpn,
        &peer(ip, None, 99),
        Psn::new(1),
        &RcOptions::default(),
    )
    .unwrap()
}

/// Moves frames between two hosts on virtual time until `done` or 10 virtual seconds.
fn run(
    a: &mut ResolvingEndpoint,
    b: &mut ResolvingEndpoint,
    now: &mut Instant,
    mut done: impl FnMut(&mut ResolvingEndpoint, &mut ResolvingEndpoint) -> bool,
) -> bool {
    let (mut pa, mut pb) = loopback_pair(1500, 1024);
    let deadline = *now + Duration::from_secs(10);
    while *now < deadline {
        let mut moved = 0;
        for (h, p) in [(&mut *a, &mut pa), (&mut *b, &mut pb)] {
            h.handle_timeout(*now);
            let mut out = Vec::new();
            loop {
                let mut buf = p.alloc().unwrap();
                let room = buf.room();
                buf.set_frame_len(room);
                match h.poll_transmit(*now, buf.frame_mut()) {
                    Some(n) => {
                        buf.set_frame_len(n);
                        out.push(buf);
                    }
                    None => break,
                }
            }
            moved += out.len();
            p.tx_burst(&mut out);
        }
        for (h, p) in [(&mut *a, &mut pa), (&mut *b, &mut pb)] {
            let mut inb = Vec::new();
            p.rx_burst(&mut inb, 1024);
            for f in &inb {
                h.handle_frame(*now, f.frame());
            }
        }
        if done(a, b) {
            return true;
        }
        let next = [a.poll_timeout(), b.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        *now = match next {
            Some(t) if moved == 0 && t > *now => t,
            _ => *now + Duration::from_micros(1),
        };
    }
    false
}

#[test]
fn unknown_peer_mac_is_resolved_by_arp_then_the_qp_moves_data() {
    let (mut a, mut b) = (host(MAC_A, IP_A), host(MAC_B, IP_B));
    let (sa, sb) = (qp(&mut a), qp(&mut b));
    let o = RcOptions::default();
    let mut now = Instant::ZERO;
    let m = a
        .connect_qp(now, sa.qpn, &peer(IP_B, None, sb.qpn), Psn::new(100), &o)
        .unwrap();
    assert_eq!(m, Modify::Deferred);
    assert!(a.is_deferred(sa.qpn));
    let m = b
        .connect_qp(now, sb.qpn, &peer(IP_A, None, sa.qpn), Psn::new(100), &o)
        .unwrap();
    assert_eq!(m, Modify::Deferred);
    assert_eq!(a.endpoint().qp(sa.qpn).unwrap().state(), QpState::Init);
    let mut events = Vec::new();
    let ok = run(&mut a, &mut b, &mut now, |a, b| {
        while let Some(e) = a.poll_event() {
            events.push(e);
        }
        while let Some(e) = b.poll_event() {
            events.push(e);
        }
        !a.is_deferred(sa.qpn) && !b.is_deferred(sb.qpn)
    });
    assert!(ok);
    assert!(events.contains(&ResolutionEvent::QpResolved {
        qpn: sa.qpn,
        mac: MAC_B
    }));
    assert!(events.contains(&ResolutionEvent::QpResolved {
        qpn: sb.qpn,
        mac: MAC_A
    }));
    assert_eq!(a.endpoint().qp(sa.qpn).unwrap().state(), QpState::Rts);
    assert_eq!(b.endpoint().qp(sb.qpn).unwrap().state(), QpState::Rts);

    // A WRITE now crosses.
    let src = a.endpoint_mut().reg_mr(sa.pd, 64, AccessFlags::LOCAL_WRITE);
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let dst = b.endpoint_mut().reg_mr(sb.pd, 64, access);
    a.endpoint_mut()
        .mr_mut(src.lkey)
        .unwrap()
        .bytes_mut()
        .fill(0x5a);
    let wr = SendWr::new(
        7,
        WrOpcode::RdmaWrite {
            remote_addr: dst.addr,
            rkey: dst.rkey,
        },
        Sge {
            addr: src.addr,
            length: 64,
            lkey: src.lkey,
        },
    );
    a.endpoint_mut().post_send(sa.qpn, wr).unwrap();
    let mut wc = None;
    assert!(run(&mut a, &mut b, &mut now, |a, _| {
        wc = a.endpoint_mut().poll_cq_one(sa.cq);
        wc.is_some()
    }));
    assert_eq!(
        wc.map(|w| (w.wr_id, w.status)),
        Some((7, WcStatus::Success))
    );
    assert!(b
        .endpoint()
        .mr(dst.lkey)
        .unwrap()
        .bytes()
        .iter()
        .all(|&x| x == 0x5a));
    let (ca, cb) = (a.counters(), b.counters());
    assert_eq!(ca.arp_tx_requests, 1);
    assert_eq!(cb.arp_tx_replies, 1);
    assert!(ca.endpoint.tx_frames >= 1);
    assert!(cb.endpoint.rx_frames >= 1);
    let _ = sb.cq;
}

#[test]
fn static_neighbour_applies_the_connection_at_once() {
    let mut a = host(MAC_A, IP_A);
    let sa = qp(&mut a);
    a.insert_static(IpAddr::V4(IP_B), MAC_B);
    let m = connect_to_99(&mut a, sa.qpn, IP_B);
    assert_eq!(m, Modify::Applied);
    let av = a.endpoint().qp(sa.qpn).unwrap().address_vector().unwrap();
    assert_eq!(av.remote_mac, MAC_B);
}

#[test]
fn silent_peer_makes_the_qp_unreachable_after_three_requests() {
    let (mut a, mut b) = (host(MAC_A, IP_A), host(MAC_B, IP_B));
    let sa = qp(&mut a);
    let silent = Ipv4Addr::new(198, 18, 0, 99);
    let m = connect_to_99(&mut a, sa.qpn, silent);
    assert_eq!(m, Modify::Deferred);
    let mut now = Instant::ZERO;
    let mut event = None;
    assert!(run(&mut a, &mut b, &mut now, |a, _| {
        event = a.poll_event();
        event.is_some()
    }));
    assert_eq!(
        event,
        Some(ResolutionEvent::QpUnreachable {
            qpn: sa.qpn,
            ip: IpAddr::V4(silent)
        })
    );
    assert_eq!(a.endpoint().qp(sa.qpn).unwrap().state(), QpState::Err);
    assert_eq!(a.counters().arp_tx_requests, 3);
    assert!(!a.is_deferred(sa.qpn));
}

#[test]
fn modify_of_a_missing_qp_is_an_error() {
    let mut a = host(MAC_A, IP_A);
    let attr = QpAttr::default();
    assert_eq!(
        a.modify_qp(Instant::ZERO, 1234, &attr),
        Err(QpError::UnknownQp(1234))
    );
}

#[test]
fn a_destroyed_qps_pending_connect_never_reaches_the_next_qp_with_its_number() {
    let (mut a, mut b) = (host(MAC_A, IP_A), host(MAC_B, IP_B));
    let old = qp(&mut a);
    let silent = Ipv4Addr::new(198, 18, 0, 99);
    assert_eq!(connect_to_99(&mut a, old.qpn, silent), Modify::Deferred);
    a.destroy_qp(old.qpn).unwrap();
    assert!(!a.is_deferred(old.qpn));
    // The next QP takes the same number and connects to a peer that answers.
    let new = a
        .endpoint_mut()
        .create_qp(QpInit::shared_cq(old.pd, old.cq, 16, 16))
        .unwrap();
    assert_eq!(new, old.qpn);
    let sb = qp(&mut b);
    let o = RcOptions::default();
    let mut now = Instant::ZERO;
    let _ = a
        .connect_qp(now, new, &peer(IP_B, None, sb.qpn), Psn::new(1), &o)
        .unwrap();
    let _ = b
        .connect_qp(now, sb.qpn, &peer(IP_A, None, new), Psn::new(1), &o)
        .unwrap();
    let mut events = Vec::new();
    // Run until nothing is left to happen: past the silent address's three ARP requests.
    assert!(run(&mut a, &mut b, &mut now, |a, b| {
        events.extend(std::iter::from_fn(|| a.poll_event()));
        a.poll_timeout().is_none() && b.poll_timeout().is_none()
    }));
    assert!(now >= Instant::from_nanos(3_000_000_000), "{now:?}");
    assert_eq!(
        a.counters().arp_tx_requests,
        4,
        "B once, the silent address 3 times"
    );
    assert_eq!(
        events,
        [ResolutionEvent::QpResolved {
            qpn: new,
            mac: MAC_B
        }]
    );
    assert_eq!(a.endpoint().qp(new).unwrap().state(), QpState::Rts);
}

/// Two QPs of one endpoint connected to each other at our own address resolve to our MAC at
/// once, and a WRITE and its ACK loop back
/// inside the engine: nothing reaches the port, no ARP is asked.
#[test]
fn qps_connected_to_our_own_address_talk_without_the_port() {
    let mut a = host(MAC_A, IP_A);
    let (s1, s2) = (qp(&mut a), qp(&mut a));
    let o = RcOptions::default();
    let now = Instant::ZERO;
    // Our address as a GID gives it resolves too.
    let mapped = IpAddr::V6(IP_A.to_ipv6_mapped());
    assert_eq!(a.resolve(now, mapped), Some(MAC_A));
    let m = a
        .connect_qp(now, s1.qpn, &peer(IP_A, None, s2.qpn), Psn::new(100), &o)
        .unwrap();
    assert_eq!(m, Modify::Applied);
    let m = a
        .connect_qp(now, s2.qpn, &peer(IP_A, None, s1.qpn), Psn::new(100), &o)
        .unwrap();
    assert_eq!(m, Modify::Applied);
    let av = a.endpoint().qp(s1.qpn).unwrap().address_vector().unwrap();
    assert_eq!(av.remote_mac, MAC_A);

    let src = a
        .endpoint_mut()
        .reg_mr(s1.pd, 4096, AccessFlags::LOCAL_WRITE);
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let dst = a.endpoint_mut().reg_mr(s2.pd, 4096, access);
    a.endpoint_mut()
        .mr_mut(src.lkey)
        .unwrap()
        .bytes_mut()
        .fill(0x3c);
    let wr = SendWr::new(
        9,
        WrOpcode::RdmaWrite {
            remote_addr: dst.addr,
            rkey: dst.rkey,
        },
        Sge {
            addr: src.addr,
            length: 4096,
            lkey: src.lkey,
        },
    );
    a.endpoint_mut().post_send(s1.qpn, wr).unwrap();
    // Four 1024-byte packets and an ACK, all looped back; the port gets nothing.
    assert_eq!(a.endpoint().qp(s1.qpn).unwrap().state(), QpState::Rts);
    assert_eq!(a.endpoint().qp(s2.qpn).unwrap().state(), QpState::Rts);
    let mut buf = [0u8; 2048];
    let mut polls = 0;
    let mut now = now;
    let wc = loop {
        now += Duration::from_micros(1);
        a.handle_timeout(now);
        assert_eq!(a.poll_transmit(now, &mut buf), None);
        if let Some(wc) = a.endpoint_mut().poll_cq_one(s1.cq) {
            break wc;
        }
        polls += 1;
        assert!(polls < 100, "no completion: {:?}", a.counters());
    };
    assert_eq!((wc.wr_id, wc.status), (9, WcStatus::Success));
    assert!(a
        .endpoint()
        .mr(dst.lkey)
        .unwrap()
        .bytes()
        .iter()
        .all(|&x| x == 0x3c));
    let c = a.counters();
    assert_eq!(c.arp_tx_requests, 0);
    assert!(c.looped_back >= 5, "{c:?}");
    assert_eq!(c.looped_back, c.endpoint.tx_frames);
    assert_eq!(c.looped_back, c.endpoint.rx_frames);
    let _ = s2.cq;
}

#[test]
fn our_ipv6_address_resolves_to_our_mac_without_a_solicitation() {
    let ll: std::net::Ipv6Addr = "fe80::5054:ff:fe00:a".parse().unwrap();
    let mut cfg = EndpointConfig::ipv4(MAC_A, IP_A);
    cfg.ipv6 = Some(ll);
    let mut a = ResolvingEndpoint::new(cfg);
    assert_eq!(a.resolve(Instant::ZERO, IpAddr::V6(ll)), Some(MAC_A));
    let other: std::net::Ipv6Addr = "fe80::5054:ff:fe00:b".parse().unwrap();
    assert_eq!(a.resolve(Instant::ZERO, IpAddr::V6(other)), None);
    let mut buf = [0u8; 128];
    assert!(a.poll_transmit(Instant::ZERO, &mut buf).is_some());
    assert_eq!(a.counters().ndp_tx_solicits, 1);
}
