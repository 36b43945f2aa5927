//! IPv6 neighbour discovery messages (RFC 4861) over Ethernet: Neighbor Solicitation and
//! Advertisement ([`NdpRepr`]), whole frames ([`parse_frame`], [`emit_frame`]) and the ICMPv6
//! checksum. Only the format: answering and remembering neighbours is
//! [`crate::ndp::Responder`]. Not here: router discovery, redirects, other ICMPv6 messages.

use std::net::Ipv6Addr;

use super::ethernet;
use super::ethernet::{EtherType, EthernetAddress};
use super::{ipv4, ipv6, Ecn};

/// IPv6 next header of ICMPv6.
pub const NEXT_HEADER_ICMPV6: u8 = 58;
/// ICMPv6 type of a Neighbor Solicitation.
pub const TYPE_SOLICIT: u8 = 135;
/// ICMPv6 type of a Neighbor Advertisement.
pub const TYPE_ADVERT: u8 = 136;
/// Hop limit every neighbour discovery packet carries (and must arrive with).
pub const HOP_LIMIT: u8 = 255;
/// ICMPv6 length of a solicitation or advertisement with one link-layer address option.
pub const MESSAGE_LEN: usize = 32;

const OPT_SOURCE_LL: u8 = 1;
const OPT_TARGET_LL: u8 = 2;
const FLAG_ROUTER: u8 = 0x80;
const FLAG_SOLICITED: u8 = 0x40;
const FLAG_OVERRIDE: u8 = 0x20;

/// Why a frame was not taken as neighbour discovery, or could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NdpError {
    /// Not IPv6/ICMPv6 Neighbor Solicitation or Advertisement.
    #[error("not neighbour discovery")]
    NotNdp,
    /// The frame ends early or an option length is impossible.
    #[error("truncated or malformed neighbour discovery packet")]
    Malformed,
    /// Hop limit other than 255: the packet crossed a router (RFC 4861 7.1.1).
    #[error("hop limit {0}, must be 255")]
    HopLimit(u8),
    /// The ICMPv6 checksum does not match.
    #[error("bad ICMPv6 checksum")]
    BadChecksum,
    /// The output buffer is shorter than the frame.
    #[error("buffer too small")]
    BufferTooSmall,
}

/// A Neighbor Solicitation or Advertisement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdpRepr {
    /// Who has `target`? (with the asker's MAC, unless it is doing DAD).
    Solicit {
        /// The address asked for.
        target: Ipv6Addr,
        /// Source link-layer address option.
        source_mac: Option<EthernetAddress>,
    },
    /// `target` is at `target_mac`.
    Advert {
        /// Sent by a router.
        router: bool,
        /// In answer to a solicitation.
        solicited: bool,
        /// Replaces a cached address.
        override_cache: bool,
        /// The address announced.
        target: Ipv6Addr,
        /// Target link-layer address option.
        target_mac: Option<EthernetAddress>,
    },
}

/// The solicited-node multicast address of `ip` (ff02::1:ffXX:XXXX).
pub fn solicited_node(ip: Ipv6Addr) -> Ipv6Addr {
    let o = ip.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(o[13]),
        u16::from_be_bytes([o[14], o[15]]),
    )
}

/// The Ethernet multicast address of an IPv6 multicast address (33:33 + last 4 bytes).
pub fn multicast_mac(ip: Ipv6Addr) -> EthernetAddress {
    let o = ip.octets();
    EthernetAddress([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

/// The ICMPv6 checksum of `message` (its checksum field zero or not: bytes 2..4 are skipped).
fn icmpv6_checksum(src: Ipv6Addr, dst: Ipv6Addr, message: &[u8]) -> Option<u16> {
    let mut buf = [0u8; 40 + 64];
    let total = 40 + message.len();
    let out = buf.get_mut(..total)?;
    out[..16].copy_from_slice(&src.octets());
    out[16..32].copy_from_slice(&dst.octets());
    out[32..36].copy_from_slice(&(message.len() as u32).to_be_bytes());
    out[39] = NEXT_HEADER_ICMPV6;
    out[40..].copy_from_slice(message);
    out[42] = 0;
    out[43] = 0;
    Some(ipv4::checksum(out))
}

/// A parsed neighbour discovery frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdpFrame {
    /// The Ethernet header.
    pub eth: ethernet::Repr,
    /// The IPv6 header.
    pub ip: ipv6::Repr,
    /// The message.
    pub ndp: NdpRepr,
}

/// Parses an Ethernet frame carrying a Neighbor Solicitation or Advertisement, checking hop
/// limit and ICMPv6 checksum. Other frames give `NotNdp`.
pub fn parse_frame(frame: &[u8]) -> Result<NdpFrame, NdpError> {
    let eth = ethernet::Frame::new_checked(frame).map_err(|_| NdpError::NotNdp)?;
    let eth_repr = ethernet::Repr::parse(&eth).map_err(|_| NdpError::NotNdp)?;
    if eth_repr.ethertype != EtherType::Ipv6 {
        return Err(NdpError::NotNdp);
    }
    let ip = ipv6::Packet::new_checked(eth.payload()).map_err(|_| NdpError::Malformed)?;
    let ip_repr = ipv6::Repr::parse(&ip).map_err(|_| NdpError::Malformed)?;
    let msg = ip.payload();
    let (Some(&kind), Some(&code)) = (msg.first(), msg.get(1)) else {
        return Err(NdpError::NotNdp);
    };
    if ip_repr.next_header != NEXT_HEADER_ICMPV6 || !matches!(kind, TYPE_SOLICIT | TYPE_ADVERT) {
        return Err(NdpError::NotNdp);
    }
    if code != 0 || msg.len() < 24 || msg.len() > 64 {
        return Err(NdpError::Malformed);
    }
    if ip_repr.hop_limit != HOP_LIMIT {
        return Err(NdpError::HopLimit(ip_repr.hop_limit));
    }
    let found = u16::from_be_bytes([msg[2], msg[3]]);
    if icmpv6_checksum(ip_repr.src, ip_repr.dst, msg) != Some(found) {
        return Err(NdpError::BadChecksum);
    }
    let mut target = [0u8; 16];
    target.copy_from_slice(&msg[8..24]);
    let target = Ipv6Addr::from(target);
    let mut source_mac = None;
    let mut target_mac = None;
    let mut opts = &msg[24..];
    while let (Some(&opt), Some(&len)) = (opts.first(), opts.get(1)) {
        let len = usize::from(len) * 8;
        if len == 0 || len > opts.len() {
            return Err(NdpError::Malformed);
        }
        let mac = opts.get(2..8).and_then(EthernetAddress::from_bytes);
        match opt {
            OPT_SOURCE_LL => source_mac = mac,
            OPT_TARGET_LL => target_mac = mac,
            _ => {}
        }
        opts = &opts[len..];
    }
    let ndp = if kind == TYPE_SOLICIT {
        NdpRepr::Solicit { target, source_mac }
    } else {
        let flags = msg[4];
        NdpRepr::Advert {
            router: flags & FLAG_ROUTER != 0,
            solicited: flags & FLAG_SOLICITED != 0,
            override_cache: flags & FLAG_OVERRIDE != 0,
            target,
            target_mac,
        }
    };
    Ok(NdpFrame {
        eth: eth_repr,
        ip: ip_repr,
        ndp,
    })
}

/// Writes `ndp` from `src_ip`/`src_mac` to `dst_ip`/`dst_mac` into `buf` (hop limit 255, the
/// checksum filled in); returns the frame length (86 with a link-layer option).
pub fn emit_frame(
    ndp: &NdpRepr,
    src_mac: EthernetAddress,
    dst_mac: EthernetAddress,
    src_ip: Ipv6Addr,
    dst_ip: Ipv6Addr,
    buf: &mut [u8],
) -> Result<usize, NdpError> {
    let (kind, flags, target, opt) = match *ndp {
        NdpRepr::Solicit { target, source_mac } => (
            TYPE_SOLICIT,
            0,
            target,
            source_mac.map(|m| (OPT_SOURCE_LL, m)),
        ),
        NdpRepr::Advert {
            router,
            solicited,
            override_cache,
            target,
            target_mac,
        } => {
            let flags = (u8::from(router) * FLAG_ROUTER)
                | (u8::from(solicited) * FLAG_SOLICITED)
                | (u8::from(override_cache) * FLAG_OVERRIDE);
            (
                TYPE_ADVERT,
                flags,
                target,
                target_mac.map(|m| (OPT_TARGET_LL, m)),
            )
        }
    };
    let msg_len = if opt.is_some() { MESSAGE_LEN } else { 24 };
    let eth = ethernet::Repr {
        dst: dst_mac,
        src: src_mac,
        vlan: None,
        ethertype: EtherType::Ipv6,
    };
    let ip = ipv6::Repr {
        src: src_ip,
        dst: dst_ip,
        dscp: 0,
        ecn: Ecn::NotEct,
        flow_label: 0,
        hop_limit: HOP_LIMIT,
        next_header: NEXT_HEADER_ICMPV6,
        payload_len: msg_len,
    };
    let len = eth.buffer_len() + ip.buffer_len() + msg_len;
    let out = buf.get_mut(..len).ok_or(NdpError::BufferTooSmall)?;
    let mut frame = ethernet::Frame::new_unchecked(&mut *out);
    eth.emit(&mut frame);
    let mut packet = ipv6::Packet::new_unchecked(frame.payload_mut());
    ip.emit(&mut packet);
    let msg = packet
        .into_inner()
        .get_mut(ipv6::HEADER_LEN..)
        .ok_or(NdpError::BufferTooSmall)?;
    msg.fill(0);
    msg[0] = kind;
    msg[4] = flags;
    msg[8..24].copy_from_slice(&target.octets());
    if let Some((opt_type, mac)) = opt {
        msg[24] = opt_type;
        msg[25] = 1;
        msg[26..32].copy_from_slice(&mac.0);
    }
    let sum = icmpv6_checksum(src_ip, dst_ip, msg).ok_or(NdpError::BufferTooSmall)?;
    msg[2..4].copy_from_slice(&sum.to_be_bytes());
    Ok(len)
}

#[cfg(test)]
pub(crate) mod tests;
