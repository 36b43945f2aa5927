//! ARP resolver tests: the resolver as a conversation of frames.

use super::*;
use crate::wire::arp::tests::{
    A_IP, A_MAC, OUR_IP, OUR_MAC, REPLY_FROM_A, REPLY_TO_A, REQUEST_FOR_A, REQUEST_FROM_A,
};
use crate::wire::hex;

fn t(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn resolver() -> Resolver {
    Resolver::new(Config::new(OUR_MAC, OUR_IP))
}

fn transmit(r: &mut Resolver, now: Instant) -> Option<Vec<u8>> {
    let mut buf = [0xa5u8; 64];
    let len = r.poll_transmit(now, &mut buf).unwrap()?;
    Some(buf[..len].to_vec())
}

#[test]
fn answers_request_for_our_address_and_learns_asker() {
    let mut r = resolver();
    assert!(r.handle_frame(t(0), &REQUEST_FROM_A).is_ok());
    assert_eq!(transmit(&mut r, t(0)).as_deref(), Some(&REPLY_TO_A[..]));
    assert_eq!(transmit(&mut r, t(0)), None);
    // The asker is now known without a request of our own.
    assert_eq!(r.lookup(t(1), A_IP), Lookup::Reachable(A_MAC));
    let c = r.counters();
    assert_eq!(
        (c.rx_arp, c.rx_requests_for_us, c.tx_replies, c.tx_requests),
        (1, 1, 1, 0)
    );
}

#[test]
fn ignores_requests_for_other_addresses() {
    let mut r = resolver();
    let mut other = REQUEST_FROM_A;
    other[41] = 0x0c; // who has 198.18.0.12
    assert!(r.handle_frame(t(0), &other).is_ok());
    assert_eq!(transmit(&mut r, t(0)), None);
    assert!(
        r.is_empty(),
        "a request for someone else must not fill our cache"
    );
}

#[test]
fn non_arp_frames_are_handed_back_uncounted() {
    let mut r = resolver();
    let mut ip = REQUEST_FROM_A;
    ip[13] = 0x00;
    assert_eq!(r.handle_frame(t(0), &ip), Err(ArpError::NotArp));
    assert_eq!(
        r.handle_frame(t(0), &REQUEST_FROM_A[..30]),
        Err(ArpError::Truncated)
    );
    assert_eq!(r.counters().rx_arp, 0);
    assert_eq!(r.counters().rx_malformed, 1);
}

#[test]
fn resolves_peer_with_request_and_reply() {
    let mut r = resolver();
    assert_eq!(r.lookup(t(0), A_IP), Lookup::Pending);
    assert_eq!(r.poll_timeout(), Some(t(0)));
    assert_eq!(transmit(&mut r, t(0)).as_deref(), Some(&REQUEST_FOR_A[..]));
    assert_eq!(
        transmit(&mut r, t(0)),
        None,
        "one request per retry interval"
    );
    assert_eq!(r.lookup(t(10), A_IP), Lookup::Pending);
    assert!(r.handle_frame(t(20), &REPLY_FROM_A).is_ok());
    assert_eq!(
        r.poll_event(),
        Some(Event::Resolved {
            ip: A_IP,
            mac: A_MAC
        })
    );
    assert_eq!(r.poll_event(), None);
    assert_eq!(r.lookup(t(21), A_IP), Lookup::Reachable(A_MAC));
    assert_eq!(r.poll_timeout(), None);
    assert_eq!(r.counters().resolved, 1);
}

#[test]
fn retries_then_declares_unreachable() {
    let mut r = resolver();
    assert_eq!(r.lookup(t(0), A_IP), Lookup::Pending);
    let mut sent = Vec::new();
    let mut now = t(0);
    for _ in 0..10 {
        r.handle_timeout(now);
        while let Some(frame) = transmit(&mut r, now) {
            assert_eq!(frame, REQUEST_FOR_A);
            sent.push(now);
        }
        match r.poll_timeout() {
            Some(next) => now = next,
            None => break,
        }
    }
    assert_eq!(sent, vec![t(0), t(1000), t(2000)]);
    assert_eq!(r.poll_event(), Some(Event::Unreachable { ip: A_IP }));
    assert!(r.is_empty());
    assert_eq!((r.counters().tx_requests, r.counters().unreachable), (3, 1));
    // A new lookup starts over.
    assert_eq!(r.lookup(now, A_IP), Lookup::Pending);
}

#[test]
fn entries_expire_after_reachable_time() {
    let mut r = resolver();
    r.handle_frame(t(0), &REQUEST_FROM_A).unwrap();
    let _ = transmit(&mut r, t(0));
    assert_eq!(r.lookup(t(29_999), A_IP), Lookup::Reachable(A_MAC));
    assert_eq!(r.lookup(t(30_000), A_IP), Lookup::Pending);
    assert_eq!(
        transmit(&mut r, t(30_000)).as_deref(),
        Some(&REQUEST_FOR_A[..])
    );
    assert_eq!(r.counters().evicted, 1);
}

#[test]
fn handle_timeout_purges_expired_entries() {
    let mut r = resolver();
    r.handle_frame(t(0), &REQUEST_FROM_A).unwrap();
    r.handle_timeout(t(30_000));
    assert!(r.is_empty());
}

#[test]
fn static_entries_never_expire_and_replies_refresh_known_senders() {
    let mut r = resolver();
    r.insert_static(A_IP, A_MAC);
    assert_eq!(r.lookup(t(1_000_000_000), A_IP), Lookup::Reachable(A_MAC));
    // A reply that merely passes by (not for us) still updates a known sender's MAC.
    let new_mac = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x99]);
    let moved = ArpRepr {
        operation: Operation::Reply,
        sender_mac: new_mac,
        sender_ip: A_IP,
        target_mac: A_MAC,
        target_ip: Ipv4Addr::new(198, 18, 0, 12),
    };
    r.handle_arp(t(1), &moved);
    assert_eq!(r.lookup(t(2), A_IP), Lookup::Reachable(new_mac));
}

#[test]
fn announce_sends_gratuitous_request() {
    let mut r = resolver();
    r.announce();
    assert_eq!(r.poll_timeout(), Some(Instant::ZERO));
    let frame = transmit(&mut r, t(0)).unwrap();
    let (eth, arp) = parse_frame(&frame).unwrap();
    assert_eq!(eth.dst, EthernetAddress::BROADCAST);
    assert_eq!(arp, ArpRepr::request(OUR_MAC, OUR_IP, OUR_IP));
    assert_eq!(transmit(&mut r, t(0)), None);
}

#[test]
fn full_table_evicts_reachable_before_refusing() {
    let mut r = Resolver::new(Config {
        capacity: 1,
        ..Config::new(OUR_MAC, OUR_IP)
    });
    r.handle_frame(t(0), &REQUEST_FROM_A).unwrap();
    assert_eq!(
        r.lookup(t(1), Ipv4Addr::new(198, 18, 0, 12)),
        Lookup::Pending
    );
    assert_eq!(
        r.lookup(t(1), Ipv4Addr::new(198, 18, 0, 13)),
        Lookup::TableFull
    );
    assert_eq!(r.counters().evicted, 1);
}

#[test]
fn small_buffer_keeps_reply_queued() {
    let mut r = resolver();
    r.handle_frame(t(0), &REQUEST_FROM_A).unwrap();
    let mut small = [0u8; 20];
    assert_eq!(
        r.poll_transmit(t(0), &mut small),
        Err(ArpError::BufferTooSmall)
    );
    assert_eq!(transmit(&mut r, t(0)).as_deref(), Some(&REPLY_TO_A[..]));
}

/// Real frames captured on br-rxe by tools/interop/run.sh (Debian 12 guests, kernel 6.1): guest b
/// asks who has 198.18.0.11, guest a answers.
static LINUX_REQUEST_B_FOR_A: [u8; 42] = hex(
    "ffffffffffff 525400120012 0806 0001080006040001 525400120012c612000c 000000000000c612000b",
);
static LINUX_REPLY_A_TO_B: [u8; 42] = hex(
    "525400120012 525400120011 0806 0001080006040002 525400120011c612000b 525400120012c612000c",
);

#[test]
fn answers_a_linux_request_exactly_as_linux_does() {
    let mut as_a = Resolver::new(Config::new(A_MAC, A_IP));
    as_a.handle_frame(t(0), &LINUX_REQUEST_B_FOR_A).unwrap();
    assert_eq!(
        transmit(&mut as_a, t(0)).as_deref(),
        Some(&LINUX_REPLY_A_TO_B[..])
    );
}

#[test]
fn resolves_through_a_linux_reply() {
    let b_mac = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x12]);
    let b_ip = Ipv4Addr::new(198, 18, 0, 12);
    let mut as_b = Resolver::new(Config::new(b_mac, b_ip));
    assert_eq!(as_b.lookup(t(0), A_IP), Lookup::Pending);
    assert_eq!(
        transmit(&mut as_b, t(0)).as_deref(),
        Some(&LINUX_REQUEST_B_FOR_A[..])
    );
    as_b.handle_frame(t(2), &LINUX_REPLY_A_TO_B).unwrap();
    assert_eq!(
        as_b.poll_event(),
        Some(Event::Resolved {
            ip: A_IP,
            mac: A_MAC
        })
    );
}

#[test]
fn a_flood_of_requests_queues_one_reply_per_asker_and_a_bounded_number_in_all() {
    let mut r = resolver();
    for _ in 0..1000 {
        r.handle_frame(t(0), &REQUEST_FROM_A).unwrap();
    }
    for i in 0..1000u32 {
        let mut f = REQUEST_FROM_A;
        f[28..32].copy_from_slice(&Ipv4Addr::from(0x0a00_0000 + i).octets());
        r.handle_frame(t(0), &f).unwrap();
    }
    let sent = std::iter::from_fn(|| transmit(&mut r, t(0))).count();
    assert_eq!(sent, MAX_QUEUED_REPLIES);
    assert_eq!(
        r.counters().replies_dropped,
        1001 - MAX_QUEUED_REPLIES as u64
    );
}
