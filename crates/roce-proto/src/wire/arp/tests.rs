//! ARP wire tests: static frames both ways (Linux's, byte for byte). The frames are shared with
//! the resolver's tests.

use super::*;
use crate::wire::hex;

pub(crate) const OUR_MAC: EthernetAddress = EthernetAddress([0x02, 0x00, 0x00, 0x00, 0x00, 0x02]);
pub(crate) const OUR_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
pub(crate) const A_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x11]);
pub(crate) const A_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);

/// Guest a (Linux) asks who has 198.18.0.2, as rxe does during modify_qp(RTR).
pub(crate) static REQUEST_FROM_A: [u8; 42] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst: broadcast
    0x52, 0x54, 0x00, 0x12, 0x00, 0x11, // src: guest a
    0x08, 0x06, // ARP
    0x00, 0x01, 0x08, 0x00, 0x06, 0x04, // Ethernet, IPv4, 6, 4
    0x00, 0x01, // request
    0x52, 0x54, 0x00, 0x12, 0x00, 0x11, 0xc6, 0x12, 0x00, 0x0b, // sender a, 198.18.0.11
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc6, 0x12, 0x00, 0x02, // target ?, 198.18.0.2
];

/// Our answer to it.
pub(crate) static REPLY_TO_A: [u8; 42] = [
    0x52, 0x54, 0x00, 0x12, 0x00, 0x11, // dst: guest a
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // src: us
    0x08, 0x06, // ARP
    0x00, 0x01, 0x08, 0x00, 0x06, 0x04, // Ethernet, IPv4, 6, 4
    0x00, 0x02, // reply
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc6, 0x12, 0x00, 0x02, // sender us, 198.18.0.2
    0x52, 0x54, 0x00, 0x12, 0x00, 0x11, 0xc6, 0x12, 0x00, 0x0b, // target a, 198.18.0.11
];

/// Our request for guest a, and guest a's reply to it.
pub(crate) static REQUEST_FOR_A: [u8; 42] = hex(
    "ffffffffffff 020000000002 0806 0001080006040001 020000000002c6120002 000000000000c612000b",
);
pub(crate) static REPLY_FROM_A: [u8; 42] = hex(
    "020000000002 525400120011 0806 0001080006040002 525400120011c612000b 020000000002c6120002",
);

#[test]
fn parses_request_frame() {
    let (eth, arp) = parse_frame(&REQUEST_FROM_A).unwrap();
    assert_eq!(eth.src, A_MAC);
    assert_eq!(eth.dst, EthernetAddress::BROADCAST);
    assert_eq!(arp, ArpRepr::request(A_MAC, A_IP, OUR_IP));
}

#[test]
fn emits_request_frame_byte_for_byte() {
    let mut buf = [0xa5u8; 44];
    let req = ArpRepr::request(A_MAC, A_IP, OUR_IP);
    let len = emit_frame(&req, A_MAC, EthernetAddress::BROADCAST, None, &mut buf).unwrap();
    assert_eq!(len, 42);
    assert_eq!(&buf[..42], &REQUEST_FROM_A[..]);
    assert_eq!(&buf[42..], &[0xa5, 0xa5]);
}

#[test]
fn tagged_frame_round_trips() {
    let tag = Some(VlanTag {
        pcp: 3,
        dei: false,
        vid: 7,
    });
    let mut buf = [0u8; 46];
    let req = ArpRepr::request(A_MAC, A_IP, OUR_IP);
    assert_eq!(
        emit_frame(&req, A_MAC, EthernetAddress::BROADCAST, tag, &mut buf),
        Ok(46)
    );
    let (eth, arp) = parse_frame(&buf).unwrap();
    assert_eq!((eth.vlan, arp), (tag, req));
}

#[test]
fn rejects_short_foreign_and_non_arp_frames() {
    assert_eq!(parse_frame(&REQUEST_FROM_A[..41]), Err(ArpError::Truncated));
    let mut ipv6 = REQUEST_FROM_A;
    ipv6[16] = 0x86;
    ipv6[17] = 0xdd;
    assert_eq!(
        parse_frame(&ipv6),
        Err(ArpError::Unsupported {
            htype: 1,
            ptype: 0x86dd,
            hlen: 6,
            plen: 4
        })
    );
    let mut ip = REQUEST_FROM_A;
    ip[12] = 0x08;
    ip[13] = 0x00;
    assert_eq!(parse_frame(&ip), Err(ArpError::NotArp));
    let req = ArpRepr::request(A_MAC, A_IP, OUR_IP);
    let mut small = [0u8; 41];
    assert_eq!(
        emit_frame(&req, A_MAC, EthernetAddress::BROADCAST, None, &mut small),
        Err(ArpError::BufferTooSmall)
    );
}

#[test]
fn unknown_operation_is_kept() {
    let mut frame = REQUEST_FROM_A;
    frame[21] = 9;
    assert_eq!(
        parse_frame(&frame).unwrap().1.operation,
        Operation::Unknown(9)
    );
}
