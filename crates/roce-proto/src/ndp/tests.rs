//! Neighbour discovery responder tests: solicitations in, advertisements out, Linux byte for byte.

use super::*;

use crate::wire::ndp::tests::{
    a_ip, advert_from_a, b_ip, A_MAC, B_MAC, LINUX_ADVERT_A_TO_B, LINUX_SOLICIT_B_FOR_A,
};
use crate::wire::ndp::MESSAGE_LEN;

fn solicit_from_b() -> Vec<u8> {
    let mut buf = [0u8; 128];
    let b = Responder::new(B_MAC, b_ip());
    let len = b.solicit(a_ip(), &mut buf).unwrap();
    buf[..len].to_vec()
}

#[test]
fn solicitation_round_trips_with_valid_checksum() {
    let frame = solicit_from_b();
    assert_eq!(frame.len(), 14 + 40 + MESSAGE_LEN);
    let parsed = parse_frame(&frame).unwrap();
    assert_eq!(
        parsed.eth.dst,
        EthernetAddress([0x33, 0x33, 0xff, 0x00, 0x00, 0x11])
    );
    assert_eq!((parsed.ip.src, parsed.ip.hop_limit), (b_ip(), 255));
    assert_eq!(
        parsed.ndp,
        NdpRepr::Solicit {
            target: a_ip(),
            source_mac: Some(B_MAC)
        }
    );
}

#[test]
fn corrupted_checksum_and_low_hop_limit_are_dropped() {
    let mut bad = solicit_from_b();
    bad[14 + 40 + 20] ^= 1; // a target address byte
    assert_eq!(parse_frame(&bad), Err(NdpError::BadChecksum));
    let mut routed = solicit_from_b();
    routed[14 + 7] = 64;
    assert_eq!(parse_frame(&routed), Err(NdpError::HopLimit(64)));
    let mut a = Responder::new(A_MAC, a_ip());
    assert_eq!(a.handle_frame(&bad), Err(NdpError::BadChecksum));
    assert_eq!(a.counters().rx_dropped, 1);
}

#[test]
fn other_frames_are_not_ndp() {
    let mut frame = solicit_from_b();
    frame[14 + 40] = 128; // echo request
    assert_eq!(parse_frame(&frame), Err(NdpError::NotNdp));
    frame[12] = 0x08;
    frame[13] = 0x00;
    assert_eq!(parse_frame(&frame), Err(NdpError::NotNdp));
}

#[test]
fn answers_solicitation_for_our_address_and_learns_asker() {
    let mut a = Responder::new(A_MAC, a_ip());
    a.handle_frame(&solicit_from_b()).unwrap();
    assert_eq!(a.neighbour(b_ip()), Some(B_MAC));
    let mut buf = [0u8; 128];
    let len = a.poll_transmit(&mut buf).unwrap().unwrap();
    let reply = parse_frame(&buf[..len]).unwrap();
    assert_eq!((reply.eth.src, reply.eth.dst), (A_MAC, B_MAC));
    assert_eq!((reply.ip.src, reply.ip.dst), (a_ip(), b_ip()));
    assert_eq!(reply.ndp, advert_from_a());
    assert_eq!(a.poll_transmit(&mut buf), Ok(None));
    // And the asker learns us from the advertisement.
    let mut b = Responder::new(B_MAC, b_ip());
    b.handle_frame(&buf[..len]).unwrap();
    assert_eq!(b.neighbour(a_ip()), Some(A_MAC));
}

#[test]
fn ignores_solicitations_for_other_addresses() {
    let mut c = Responder::new(A_MAC, "2001:db8::13".parse().unwrap());
    c.handle_frame(&solicit_from_b()).unwrap();
    assert_eq!(c.poll_transmit(&mut [0u8; 128]), Ok(None));
}

#[test]
fn duplicate_address_probe_is_answered_to_all_nodes() {
    let mut buf = [0u8; 128];
    let probe = NdpRepr::Solicit {
        target: a_ip(),
        source_mac: None,
    };
    let group = solicited_node(a_ip());
    let len = emit_frame(
        &probe,
        B_MAC,
        multicast_mac(group),
        Ipv6Addr::UNSPECIFIED,
        group,
        &mut buf,
    )
    .unwrap();
    assert_eq!(len, 14 + 40 + 24);
    let mut a = Responder::new(A_MAC, a_ip());
    a.handle_frame(&buf[..len]).unwrap();
    let len = a.poll_transmit(&mut buf).unwrap().unwrap();
    let reply = parse_frame(&buf[..len]).unwrap();
    assert_eq!(reply.ip.dst, "ff02::1".parse::<Ipv6Addr>().unwrap());
    assert!(matches!(
        reply.ndp,
        NdpRepr::Advert {
            solicited: false,
            ..
        }
    ));
}

#[test]
fn small_buffer_is_an_error() {
    let b = Responder::new(B_MAC, b_ip());
    assert_eq!(
        b.solicit(a_ip(), &mut [0u8; 85]),
        Err(NdpError::BufferTooSmall)
    );
}

#[test]
fn our_solicitation_is_byte_for_byte_linux() {
    assert_eq!(solicit_from_b(), LINUX_SOLICIT_B_FOR_A);
}

#[test]
fn answers_a_linux_solicitation_exactly_as_linux_does() {
    let mut a = Responder::new(A_MAC, a_ip());
    a.handle_frame(&LINUX_SOLICIT_B_FOR_A).unwrap();
    let mut buf = [0xa5u8; 128];
    let len = a.poll_transmit(&mut buf).unwrap().unwrap();
    assert_eq!(&buf[..len], &LINUX_ADVERT_A_TO_B[..]);
    assert_eq!(buf[len], 0xa5);
}

#[test]
fn a_flood_of_solicitations_queues_one_advert_per_asker_and_a_bounded_number_in_all() {
    let mut a = Responder::new(A_MAC, a_ip());
    for _ in 0..1000 {
        a.handle_frame(&solicit_from_b()).unwrap();
    }
    for i in 0..1000u16 {
        let ip = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 1, i);
        let mut buf = [0u8; 128];
        let len = Responder::new(B_MAC, ip).solicit(a_ip(), &mut buf).unwrap();
        a.handle_frame(&buf[..len]).unwrap();
    }
    let mut buf = [0u8; 128];
    let sent = std::iter::from_fn(|| a.poll_transmit(&mut buf).unwrap()).count();
    assert_eq!(sent, MAX_QUEUED_REPLIES);
    assert_eq!(
        a.counters().replies_dropped,
        1001 - MAX_QUEUED_REPLIES as u64
    );
}
