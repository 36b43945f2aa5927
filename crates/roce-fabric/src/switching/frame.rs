//! What a switch reads from a frame: 802.1Q priority, IP addresses, DSCP/ECN and the UDP ports
//! (for ECMP), and how it sets CE. A lookup of fixed offsets, not a validating parser: end hosts
//! validate with `wire::parse_frame`; a switch forwards what it cannot read as non-IP.

use roce_proto::psn::Psn;
use roce_proto::wire::ethernet::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN};
use roce_proto::wire::ipv4::PROTOCOL_UDP as PROTO_UDP;
use roce_proto::wire::{bth, int, Opcode, ROCE_UDP_PORT};

/// An IP address as a switch keys it: IPv4 addresses are stored IPv4-mapped.
pub type IpKey = u128;

/// The IPv4-mapped key of an IPv4 address.
pub fn ipv4_key(addr: std::net::Ipv4Addr) -> IpKey {
    IpKey::from(addr.to_ipv6_mapped())
}

/// The key of any IP address.
pub fn ip_key(addr: std::net::IpAddr) -> IpKey {
    match addr {
        std::net::IpAddr::V4(a) => ipv4_key(a),
        std::net::IpAddr::V6(a) => IpKey::from(a),
    }
}

/// An [`IpKey`] kept as two 64-bit halves: 8-byte aligned (a `u128` is 16), so that an
/// [`IpInfo`] takes 48 bytes and a pooled frame's per-hop fields fit one cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SplitKey {
    lo: u64,
    hi: u64,
}

impl SplitKey {
    /// The key.
    pub fn key(self) -> IpKey {
        (u128::from(self.hi) << 64) | u128::from(self.lo)
    }
}

impl From<IpKey> for SplitKey {
    fn from(k: IpKey) -> Self {
        SplitKey {
            lo: k as u64,
            hi: (k >> 64) as u64,
        }
    }
}

/// The header fields a switch acts on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameInfo {
    /// 802.1Q priority code point, if the frame is tagged.
    pub pcp: Option<u8>,
    /// Ethertype after any VLAN tag.
    pub ethertype: u16,
    /// IP fields, if the frame carries IPv4 or IPv6.
    pub ip: Option<IpInfo>,
}

/// IP and transport fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpInfo {
    /// Offset of the IP header in the frame.
    pub offset: u16,
    /// IPv6 rather than IPv4.
    pub v6: bool,
    /// Source address key.
    pub src: SplitKey,
    /// Destination address key.
    pub dst: SplitKey,
    /// DSCP (6 bits).
    pub dscp: u8,
    /// ECN codepoint (2 bits): 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.
    pub ecn: u8,
    /// IP protocol / next header.
    pub proto: u8,
    /// UDP source port (0 if not UDP).
    pub sport: u16,
    /// UDP destination port (0 if not UDP).
    pub dport: u16,
    /// Offset of the UDP header in the frame (0 if not UDP).
    pub l4: u16,
    /// UDP length field (0 if not UDP).
    pub udp_len: u16,
}

impl IpInfo {
    /// Whether the packet is ECN-capable (ECT(0), ECT(1) or already CE).
    pub fn ect(&self) -> bool {
        self.ecn != 0
    }
}

fn be16(frame: &[u8], at: usize) -> Option<u16> {
    let b = frame.get(at..at + 2)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// Reads the fields a switch needs. Never panics; what cannot be read is left out.
pub fn classify(frame: &[u8]) -> FrameInfo {
    let mut info = FrameInfo::default();
    let Some(mut ethertype) = be16(frame, 12) else {
        return info;
    };
    let mut l3 = 14;
    if ethertype == ETHERTYPE_VLAN {
        let Some(tci) = be16(frame, 14) else {
            return info;
        };
        info.pcp = Some((tci >> 13) as u8);
        ethertype = be16(frame, 16).unwrap_or(0);
        l3 = 18;
    }
    info.ethertype = ethertype;
    info.ip = match ethertype {
        ETHERTYPE_IPV4 => ipv4_info(frame, l3),
        ETHERTYPE_IPV6 => ipv6_info(frame, l3),
        _ => None,
    };
    info
}

fn ipv4_info(frame: &[u8], off: usize) -> Option<IpInfo> {
    let h = frame.get(off..off + 20)?;
    if h[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let mut src = [0u8; 4];
    src.copy_from_slice(&h[12..16]);
    let mut dst = [0u8; 4];
    dst.copy_from_slice(&h[16..20]);
    let proto = h[9];
    let (sport, dport, udp_len) = udp_ports(frame, off + ihl, proto);
    Some(IpInfo {
        offset: off as u16,
        l4: (off + ihl) as u16,
        udp_len,
        v6: false,
        src: ipv4_key(src.into()).into(),
        dst: ipv4_key(dst.into()).into(),
        dscp: h[1] >> 2,
        ecn: h[1] & 3,
        proto,
        sport,
        dport,
    })
}

fn ipv6_info(frame: &[u8], off: usize) -> Option<IpInfo> {
    let h = frame.get(off..off + 40)?;
    if h[0] >> 4 != 6 {
        return None;
    }
    let tclass = (h[0] << 4) | (h[1] >> 4);
    let mut src = [0u8; 16];
    src.copy_from_slice(&h[8..24]);
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&h[24..40]);
    let proto = h[6];
    let (sport, dport, udp_len) = udp_ports(frame, off + 40, proto);
    Some(IpInfo {
        offset: off as u16,
        l4: (off + 40) as u16,
        udp_len,
        v6: true,
        src: u128::from_be_bytes(src).into(),
        dst: u128::from_be_bytes(dst).into(),
        dscp: tclass >> 2,
        ecn: tclass & 3,
        proto,
        sport,
        dport,
    })
}

fn udp_ports(frame: &[u8], off: usize, proto: u8) -> (u16, u16, u16) {
    if proto != PROTO_UDP {
        return (0, 0, 0);
    }
    (
        be16(frame, off).unwrap_or(0),
        be16(frame, off + 2).unwrap_or(0),
        be16(frame, off + 4).unwrap_or(0),
    )
}

/// The base transport header fields the fabric's flow meter reads, without checking the ICRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BthInfo {
    /// Opcode.
    pub opcode: Opcode,
    /// Destination QP.
    pub dest_qpn: u32,
    /// PSN.
    pub psn: Psn,
    /// Payload bytes (without pad), from the UDP length and the opcode table.
    pub payload_len: usize,
}

/// Reads the BTH of a RoCEv2 frame (UDP port 4791) through the wire layer's views.
pub fn bth_info(frame: &[u8], ip: &IpInfo) -> Option<BthInfo> {
    let l4 = usize::from(ip.l4);
    if l4 == 0 {
        return None;
    }
    // An INT shim (HPCC telemetry) sits between the UDP header and the BTH.
    let shim = match ip.dport {
        ROCE_UDP_PORT => 0,
        int::INT_UDP_PORT => int::Packet::new_checked(frame.get(l4 + 8..)?)
            .ok()?
            .shim_len(),
        _ => return None,
    };
    let bth = bth::Packet::new_checked(frame.get(l4 + 8 + shim..)?).ok()?;
    let opcode = bth.opcode();
    let ext = opcode.info()?.ext_len;
    let payload_len = usize::from(ip.udp_len)
        .checked_sub(8 + shim + bth::HEADER_LEN + ext + usize::from(bth.pad_count()) + 4)?;
    Some(BthInfo {
        opcode,
        dest_qpn: bth.dest_qpn(),
        psn: bth.psn(),
        payload_len,
    })
}

/// Sets CE in the IP header of an ECN-capable packet (updating the IPv4 header checksum).
/// Returns whether the frame was changed. The RoCE ICRC masks these bits, so it stays valid.
pub fn mark_ce(head: &mut [u8], ip: &mut IpInfo) -> bool {
    if !ip.ect() || ip.ecn == 3 {
        return false;
    }
    let marked = set_header_ce(head, ip);
    if marked {
        ip.ecn = 3;
    }
    marked
}

/// Sets CE in the IP header at `ip.offset` of `head`. A switch rewrites the ECN bits (and the
/// IPv4 header checksum) from the header alone: `head` may be only the frame's leading bytes.
fn set_header_ce(head: &mut [u8], ip: &IpInfo) -> bool {
    use roce_proto::wire::{ipv4, ipv6, Ecn};
    let Some(h) = head.get_mut(usize::from(ip.offset)..) else {
        return false;
    };
    if ip.v6 {
        if h.len() < ipv6::HEADER_LEN {
            return false;
        }
        ipv6::Packet::new_unchecked(h).set_ecn(Ecn::Ce);
    } else {
        if h.len() < ipv4::HEADER_LEN {
            return false;
        }
        let ihl = ipv4::Packet::new_unchecked(&*h).header_len();
        if ihl < ipv4::HEADER_LEN || h.len() < ihl {
            return false;
        }
        let mut p = ipv4::Packet::new_unchecked(h);
        p.set_ecn(Ecn::Ce);
        p.fill_checksum();
    }
    true
}

/// A 64-bit mix of a flow's 5-tuple and a per-switch salt, for ECMP (splitmix64 finalizer).
pub fn flow_hash(ip: &IpInfo, salt: u64) -> u64 {
    let mut h = salt ^ 0x9e37_79b9_7f4a_7c15;
    for word in [
        ip.src.lo,
        ip.src.hi,
        ip.dst.lo,
        ip.dst.hi,
        (u64::from(ip.sport) << 24) | (u64::from(ip.dport) << 8) | u64::from(ip.proto),
    ] {
        h = mix64(h ^ word);
    }
    h
}

/// A fast, deterministic hasher for the fabric's small integer keys (splitmix64 per word);
/// not for keys an adversary chooses.
#[derive(Clone, Copy, Debug, Default)]
pub struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.0 = mix64(self.0 ^ u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = mix64(self.0 ^ n);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
}

/// A `HashMap` keyed through [`MixHasher`].
pub type MixMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<MixHasher>>;

/// splitmix64's finalizer.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce_proto::psn::Psn;
    use roce_proto::wire::{
        bth, ethernet, parse_frame, Ecn, EtherType, EthernetAddress, ExtRepr, IpRepr, Opcode,
        RoceRepr, VlanTag,
    };
    use std::net::IpAddr;

    fn frame(src: IpAddr, dst: IpAddr, vlan: Option<VlanTag>) -> Vec<u8> {
        let repr = RoceRepr {
            eth: ethernet::Repr {
                dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
                src: EthernetAddress([2, 0, 0, 0, 0, 1]),
                vlan,
                ethertype: EtherType::Ipv4,
            },
            ip: IpRepr::new_roce(src, dst, 26, Ecn::Ect0),
            udp_src_port: 0xc123,
            bth: bth::Repr {
                opcode: Opcode::RC_SEND_ONLY,
                dest_qpn: 17,
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

    #[test]
    fn marking_ce_keeps_the_icrc_valid_for_ipv4_and_ipv6() {
        let v4: (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let v6: (IpAddr, IpAddr) = ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
        for (src, dst) in [v4, v6] {
            let mut f = frame(src, dst, None);
            let info = classify(&f);
            let mut ip = info.ip.unwrap();
            assert_eq!((ip.dscp, ip.ecn, ip.sport, ip.dport), (26, 2, 0xc123, 4791));
            assert_eq!(ip.dst.key(), ip_key(dst));
            let b = bth_info(&f, &ip).unwrap();
            assert_eq!(
                (b.opcode, b.dest_qpn, b.psn, b.payload_len),
                (Opcode::RC_SEND_ONLY, 17, Psn::new(5), 37)
            );
            // Marking a copy of only the leading bytes changes them as marking the frame does.
            let mut head = f[..64].to_vec();
            let mut head_ip = ip;
            assert!(mark_ce(&mut head, &mut head_ip));
            assert!(mark_ce(&mut f, &mut ip));
            assert_eq!((&head[..], head_ip), (&f[..head.len()], ip));
            assert_eq!(ip.ecn, 3);
            // Too short for the IP header: not marked, no panic.
            let mut cut = classify(&head).ip.unwrap();
            cut.ecn = 2;
            assert!(!mark_ce(&mut head[..usize::from(ip.offset) + 19], &mut cut));
            let p = parse_frame(&f).expect("ICRC still valid after CE marking");
            assert_eq!(p.repr.ip.ecn(), Ecn::Ce);
            assert_eq!(p.payload, &[7u8; 37]);
            // Already CE: nothing to do.
            let mut again = classify(&f).ip.unwrap();
            assert!(!mark_ce(&mut f, &mut again));
        }
    }

    #[test]
    fn vlan_priority_is_read_from_the_pcp() {
        let tag = VlanTag {
            pcp: 5,
            dei: false,
            vid: 10,
        };
        let f = frame(
            "10.0.0.1".parse().unwrap(),
            "10.0.0.2".parse().unwrap(),
            Some(tag),
        );
        let info = classify(&f);
        assert_eq!(info.pcp, Some(5));
        assert_eq!(info.ip.map(|i| i.dscp), Some(26));
        assert_eq!(classify(&f[..10]), FrameInfo::default());
    }
}
