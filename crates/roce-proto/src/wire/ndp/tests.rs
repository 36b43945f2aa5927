//! Neighbour discovery wire tests: the multicast addresses, and Linux's frames both ways. The
//! addresses and frames are shared with the responder's tests.

use super::*;
use crate::wire::hex;

pub(crate) const A_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x11]);
pub(crate) const B_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x12]);

pub(crate) fn a_ip() -> Ipv6Addr {
    "2001:db8::11".parse().unwrap()
}
pub(crate) fn b_ip() -> Ipv6Addr {
    "2001:db8::12".parse().unwrap()
}

/// The advertisement host a answers a solicitation for its address with (as Linux does).
pub(crate) fn advert_from_a() -> NdpRepr {
    NdpRepr::Advert {
        router: false,
        solicited: true,
        override_cache: true,
        target: a_ip(),
        target_mac: Some(A_MAC),
    }
}

/// Real frames captured on br-rxe by tools/interop/run.sh (Debian 12 guests, kernel 6.1).
pub(crate) static LINUX_SOLICIT_B_FOR_A: [u8; 86] = hex(concat!(
    "3333ff00001152540012001286dd 6000000000203aff ",
    "20010db8000000000000000000000012 ff0200000000000000000001ff000011 ",
    "8700cb800000000020010db80000000000000000000000110101525400120012",
));
pub(crate) static LINUX_ADVERT_A_TO_B: [u8; 86] = hex(concat!(
    "52540012001252540012001186dd 6000000000203aff ",
    "20010db8000000000000000000000011 20010db8000000000000000000000012 ",
    "880039cd6000000020010db80000000000000000000000110201525400120011",
));

#[test]
fn solicited_node_group_and_mac() {
    assert_eq!(
        solicited_node(a_ip()),
        "ff02::1:ff00:11".parse::<Ipv6Addr>().unwrap()
    );
    assert_eq!(
        multicast_mac(solicited_node(a_ip())),
        EthernetAddress([0x33, 0x33, 0xff, 0x00, 0x00, 0x11])
    );
}

#[test]
fn emits_a_solicitation_byte_for_byte_linux() {
    let group = solicited_node(a_ip());
    let ns = NdpRepr::Solicit {
        target: a_ip(),
        source_mac: Some(B_MAC),
    };
    let mut buf = [0xa5u8; 87];
    let len = emit_frame(&ns, B_MAC, multicast_mac(group), b_ip(), group, &mut buf).unwrap();
    assert_eq!(&buf[..len], &LINUX_SOLICIT_B_FOR_A[..]);
    assert_eq!(buf[len], 0xa5);
}

#[test]
fn linux_advertisement_parses_with_its_checksum() {
    let parsed = parse_frame(&LINUX_ADVERT_A_TO_B).unwrap();
    assert_eq!(parsed.ndp, advert_from_a());
}
