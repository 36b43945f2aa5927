//! Human renderings of RoCEv2 frames: a one-line summary and an annotated header dump (field,
//! value, meaning) meant to be read aloud in a class. Everything returns `String`s or implements
//! `Display`; nothing prints. The pcap tooling on top of this lives in the CLI.

use core::fmt;
use std::fmt::Write as _;

use super::aeth::{self, Syndrome};
use super::icrc::{compute_icrc, ICRC_LEN};
use super::opcode::{Operation, Position, Transport};
use super::roce::{IpRepr, RocePacket};
use super::view::parse_frame_unverified;
use super::{ethernet, ipv4, udp, WireError, ROCE_UDP_PORT};

/// What a BTH flag bit means when clear and when set.
const SOLICITED_MEANINGS: [&str; 2] = [
    "no solicited event",
    "solicited event: wake the receiver's CQ",
];
const FECN_MEANINGS: [&str; 2] = [
    "no forward congestion mark",
    "forward ECN: congestion seen on the way",
];
const BECN_MEANINGS: [&str; 2] = [
    "no backward congestion mark",
    "backward ECN: the receiver saw congestion, slow down",
];
const ACK_REQ_MEANINGS: [&str; 2] = ["no ACK requested", "the responder must acknowledge"];

/// The `(name, meaning)` of each AtomicETH, RETH and DETH field, in wire order.
const ATOMIC_ETH_FIELDS: [(&str, &str); 4] = [
    ("virtual addr", "remote 8-byte word"),
    ("R_Key", "remote key"),
    ("swap/add", "value to swap in (CmpSwap) or add (FetchAdd)"),
    ("compare", "value to compare with (CmpSwap)"),
];
const RETH_FIELDS: [(&str, &str); 3] = [
    ("virtual addr", "remote address to read/write"),
    ("R_Key", "remote key of the memory region"),
    ("DMA length", "bytes in the whole RDMA operation"),
];
const DETH_FIELDS: [(&str, &str); 2] = [
    ("Q_Key", "queue key the receiver checks"),
    ("source QP", "sender's queue pair"),
];

/// A packet on one line (as [`Display`](fmt::Display)): addresses, opcode name and number, QPN,
/// PSN, payload length, ECN, FECN/BECN, and the AETH verdict for responses.
#[derive(Clone, Copy, Debug)]
pub struct OneLine<'p, 'a>(pub &'p RocePacket<'a>);

impl fmt::Display for OneLine<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.0.repr;
        write!(
            f,
            "{} > {} {} QPN {} PSN {} len {}",
            r.ip.src(),
            r.ip.dst(),
            r.bth.opcode,
            r.bth.dest_qpn,
            r.bth.psn,
            r.payload_len
        )?;
        if r.bth.ack_req {
            f.write_str(" AckReq")?;
        }
        if let Some(a) = r.ext.aeth {
            write!(f, " [{} MSN {}]", a.syndrome, a.msn.value())?;
        }
        write!(f, " ECN {}", r.ip.ecn())?;
        if r.bth.fecn {
            f.write_str(" FECN")?;
        }
        if r.bth.becn {
            f.write_str(" BECN")?;
        }
        Ok(())
    }
}

/// The one-line summary as a `String`.
pub fn summary(packet: &RocePacket<'_>) -> String {
    OneLine(packet).to_string()
}

/// Raw values a `Repr` does not keep, read from the frame for [`explain_frame`].
#[derive(Clone, Copy, Debug)]
struct Raw {
    ipv4_checksum: Option<(u16, bool)>,
    udp_checksum: u16,
    icrc_expected: Result<u32, WireError>,
}

/// The annotated multi-line dump of every header field of a parsed packet.
pub fn explain(packet: &RocePacket<'_>) -> String {
    Dump::render(packet, None)
}

/// Parses `frame` without trusting its ICRC and dumps it with the checksum and ICRC verdicts.
pub fn explain_frame(frame: &[u8]) -> Result<String, WireError> {
    let packet = parse_frame_unverified(frame)?;
    let eth_len = packet.repr.eth.buffer_len();
    let ip_total = packet.repr.ip.buffer_len() + packet.repr.ip.payload_len();
    let ip_bytes = frame
        .get(eth_len..eth_len + ip_total)
        .ok_or(WireError::Truncated)?;
    let ipv4_checksum = match packet.repr.ip {
        IpRepr::V4(_) => {
            let view = ipv4::Packet::new_checked(ip_bytes)?;
            Some((view.checksum(), view.verify_checksum()))
        }
        IpRepr::V6(_) => None,
    };
    let udp_view = udp::Packet::new_checked(
        ip_bytes
            .get(packet.repr.ip.buffer_len()..)
            .ok_or(WireError::Truncated)?,
    )?;
    let raw = Raw {
        ipv4_checksum,
        udp_checksum: udp_view.checksum(),
        icrc_expected: compute_icrc(&ip_bytes[..ip_total - ICRC_LEN]),
    };
    Ok(Dump::render(&packet, Some(raw)))
}

struct Dump {
    out: String,
}

impl Dump {
    fn render(packet: &RocePacket<'_>, raw: Option<Raw>) -> String {
        let mut dump = Dump { out: String::new() };
        dump.ethernet(&packet.repr.eth);
        dump.ip(&packet.repr.ip, raw);
        dump.udp(packet, raw);
        dump.bth(packet);
        dump.ext(packet);
        dump.trailer(packet, raw);
        dump.out
    }

    fn field(&mut self, layer: &str, name: &str, value: impl fmt::Display, meaning: &str) {
        let value = value.to_string();
        let start = self.out.len();
        let _ = write!(self.out, "{layer:<9} {name:<14} {value:<20} {meaning}");
        let end = start + self.out[start..].trim_end().len();
        self.out.truncate(end);
        self.out.push('\n');
    }

    /// One line per field of a header: its `(name, meaning)` and its value.
    fn fields<const N: usize>(
        &mut self,
        layer: &str,
        fields: [(&str, &str); N],
        values: [String; N],
    ) {
        for ((name, meaning), value) in fields.into_iter().zip(values) {
            self.field(layer, name, value, meaning);
        }
    }

    /// A BTH flag bit, as 0 or 1, with the meaning of its value (`[clear, set]`).
    fn flag(&mut self, name: &str, set: bool, meanings: [&str; 2]) {
        self.field("BTH", name, u8::from(set), meanings[usize::from(set)]);
    }

    fn ethernet(&mut self, eth: &ethernet::Repr) {
        self.field("Ethernet", "destination", eth.dst, "MAC of the next hop");
        self.field("Ethernet", "source", eth.src, "MAC of the sender");
        if let Some(tag) = eth.vlan {
            self.field(
                "802.1Q",
                "PCP",
                tag.pcp,
                "priority code point: the traffic class PFC pauses",
            );
            self.field("802.1Q", "DEI", u8::from(tag.dei), "drop eligible");
            self.field("802.1Q", "VID", tag.vid, "VLAN id");
        }
        let ethertype = u16::from(eth.ethertype);
        let meaning = format!("{} follows", eth.ethertype);
        self.field(
            "Ethernet",
            "EtherType",
            format!("{ethertype:#06x}"),
            &meaning,
        );
    }

    fn ecn(&mut self, layer: &str, ecn: super::Ecn) {
        let value = format!("{:#04b}", ecn.bits());
        let meaning = format!(
            "{} = {}; masked in the ICRC so switches may mark it",
            value,
            ecn.meaning()
        );
        self.field(layer, "ECN", value, &meaning);
    }

    fn ip(&mut self, ip: &IpRepr, raw: Option<Raw>) {
        match ip {
            IpRepr::V4(v4) => {
                self.field("IPv4", "version/IHL", "4 / 20 B", "IPv4, no options");
                self.field(
                    "IPv4",
                    "DSCP",
                    v4.dscp,
                    "differentiated services (QoS class)",
                );
                self.ecn("IPv4", v4.ecn);
                let total = ipv4::HEADER_LEN + v4.payload_len;
                self.field(
                    "IPv4",
                    "total length",
                    total,
                    "bytes from IP header to ICRC",
                );
                self.field("IPv4", "ident", v4.ident, "identification");
                let df = if v4.dont_frag {
                    "don't fragment: RoCE is never fragmented"
                } else {
                    "fragmentation allowed"
                };
                self.field("IPv4", "DF", u8::from(v4.dont_frag), df);
                self.field("IPv4", "TTL", v4.ttl, "hops left (masked in the ICRC)");
                self.field("IPv4", "protocol", v4.protocol, "17 = UDP");
                if let Some((sum, ok)) = raw.and_then(|r| r.ipv4_checksum) {
                    let verdict = if ok {
                        "header checksum correct"
                    } else {
                        "header checksum WRONG"
                    };
                    self.field("IPv4", "checksum", format!("{sum:#06x}"), verdict);
                }
                self.field("IPv4", "source", v4.src, "");
                self.field("IPv4", "destination", v4.dst, "");
            }
            IpRepr::V6(v6) => {
                self.field(
                    "IPv6",
                    "DSCP",
                    v6.dscp,
                    "differentiated services (QoS class)",
                );
                self.ecn("IPv6", v6.ecn);
                self.field(
                    "IPv6",
                    "flow label",
                    format!("{:#07x}", v6.flow_label),
                    "flow hint for ECMP (masked in the ICRC)",
                );
                self.field(
                    "IPv6",
                    "payload len",
                    v6.payload_len,
                    "bytes from UDP header to ICRC",
                );
                self.field("IPv6", "next header", v6.next_header, "17 = UDP");
                self.field(
                    "IPv6",
                    "hop limit",
                    v6.hop_limit,
                    "hops left (masked in the ICRC)",
                );
                self.field("IPv6", "source", v6.src, "");
                self.field("IPv6", "destination", v6.dst, "");
            }
        }
    }

    fn udp(&mut self, packet: &RocePacket<'_>, raw: Option<Raw>) {
        self.field(
            "UDP",
            "source port",
            packet.repr.udp_src_port,
            "flow entropy: fixed per QP, spreads QPs over ECMP paths",
        );
        self.field("UDP", "dest port", ROCE_UDP_PORT, "4791 = RoCEv2");
        let udp_len = packet.repr.ip.payload_len();
        self.field(
            "UDP",
            "length",
            udp_len,
            "UDP header + BTH + ext headers + payload + pad + ICRC",
        );
        if let Some(r) = raw {
            let meaning = if r.udp_checksum == 0 {
                "0 = not computed; the ICRC protects the packet"
            } else {
                "set (RoCEv2 senders normally leave it 0)"
            };
            self.field(
                "UDP",
                "checksum",
                format!("{:#06x}", r.udp_checksum),
                meaning,
            );
        }
    }

    fn bth(&mut self, packet: &RocePacket<'_>) {
        let b = &packet.repr.bth;
        let meaning = b.opcode.info().map_or_else(
            || "not in the opcode table".to_string(),
            |i| {
                let transport = match i.transport {
                    Transport::Rc => "reliable connected",
                    Transport::Uc => "unreliable connected",
                    Transport::Ud => "unreliable datagram",
                    Transport::Cnp => "congestion notification",
                };
                let role = if i.is_request {
                    "request"
                } else if i.operation == Operation::Cnp {
                    "from the notification point to the reaction point"
                } else {
                    "response"
                };
                let position = match i.position {
                    Position::First => "first packet of a message",
                    Position::Middle => "middle packet of a message",
                    Position::Last => "last packet of a message",
                    Position::Only => "whole message in one packet",
                };
                format!("{}: {transport}, {role}, {position}", i.name)
            },
        );
        self.field(
            "BTH",
            "opcode",
            format!("{:#04x} ({})", b.opcode.0, b.opcode.0),
            &meaning,
        );
        self.flag("SE", b.solicited, SOLICITED_MEANINGS);
        self.field("BTH", "M", u8::from(b.migreq), "migration request (APM)");
        let pad = format!(
            "{} pad byte(s) before the ICRC to reach 4-byte alignment",
            b.pad_count
        );
        self.field("BTH", "pad count", b.pad_count, &pad);
        self.field("BTH", "TVer", b.tver, "transport header version (0)");
        let pkey = if b.pkey == 0xffff {
            "default partition, full member"
        } else {
            "partition key"
        };
        self.field("BTH", "P_Key", format!("{:#06x}", b.pkey), pkey);
        self.flag("FECN", b.fecn, FECN_MEANINGS);
        self.flag("BECN", b.becn, BECN_MEANINGS);
        self.field(
            "BTH",
            "dest QP",
            b.dest_qpn,
            "queue pair number at the receiver",
        );
        self.flag("AckReq", b.ack_req, ACK_REQ_MEANINGS);
        self.field(
            "BTH",
            "PSN",
            b.psn,
            "packet sequence number (24 bits, wraps)",
        );
    }

    fn ext(&mut self, packet: &RocePacket<'_>) {
        let e = &packet.repr.ext;
        if let Some(d) = e.deth {
            let values = [format!("{:#010x}", d.qkey), d.src_qpn.to_string()];
            self.fields("DETH", DETH_FIELDS, values);
        }
        if let Some(r) = e.reth {
            let values = [
                format!("{:#x}", r.va),
                format!("{:#x}", r.rkey),
                r.dma_len.to_string(),
            ];
            self.fields("RETH", RETH_FIELDS, values);
        }
        if let Some(a) = e.atomic_eth {
            let (va, rkey) = (format!("{:#x}", a.va), format!("{:#x}", a.rkey));
            let values = [va, rkey, a.swap_add.to_string(), a.compare.to_string()];
            self.fields("AtomicETH", ATOMIC_ETH_FIELDS, values);
        }
        if let Some(imm) = e.immdt {
            let imm = format!("{imm:#010x}");
            self.field(
                "ImmDt",
                "immediate",
                imm,
                "delivered in the receive completion",
            );
        }
        if let Some(rkey) = e.ieth {
            self.field(
                "IETH",
                "R_Key",
                format!("{rkey:#x}"),
                "remote key to invalidate",
            );
        }
        if let Some(a) = e.aeth {
            self.aeth(a);
        }
        if let Some(a) = e.atomic_ack_eth {
            let meaning = "value the remote word held before the atomic";
            self.field("AtomicAck", "original", a.orig, meaning);
        }
        if packet.repr.bth.opcode.is_cnp() {
            self.field("CNP", "reserved", "16 B", "zero; a CNP carries no payload");
        }
    }

    fn aeth(&mut self, a: aeth::Repr) {
        let byte = a.syndrome.to_byte();
        let meaning = format!("{byte:#04x} = {}", a.syndrome);
        self.field("AETH", "syndrome", format!("{byte:#04x}"), &meaning);
        let msn = match a.syndrome {
            Syndrome::Nak(_) | Syndrome::RnrNak { .. } => {
                "message sequence number; the BTH PSN is the one expected"
            }
            _ => "message sequence number: messages the responder completed",
        };
        self.field("AETH", "MSN", a.msn.value(), msn);
    }

    fn trailer(&mut self, packet: &RocePacket<'_>, raw: Option<Raw>) {
        let pad = usize::from(packet.repr.bth.pad_count);
        let meaning = format!("{} B payload + {pad} B pad", packet.payload.len());
        self.field("Payload", "length", packet.payload.len(), &meaning);
        let value = format!("{:#010x}", packet.icrc);
        let verdict = match raw.map(|r| r.icrc_expected) {
            None => "invariant CRC (little-endian on the wire)".to_string(),
            Some(Ok(e)) if e == packet.icrc => "invariant CRC: correct".to_string(),
            Some(Ok(e)) => format!("invariant CRC: WRONG, expected {e:#010x}"),
            Some(Err(e)) => format!("invariant CRC: cannot compute ({e})"),
        };
        self.field("ICRC", "value", value, &verdict);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psn::{Msn, Psn};
    use crate::wire::aeth::NakCode;
    use crate::wire::{bth, Ecn, EtherType, EthernetAddress, ExtRepr, Opcode, RoceRepr};

    fn nak_frame(ecn: Ecn) -> Vec<u8> {
        let mut repr = RoceRepr {
            eth: ethernet::Repr {
                dst: EthernetAddress([2, 0, 0, 0, 0, 1]),
                src: EthernetAddress([2, 0, 0, 0, 0, 2]),
                vlan: None,
                ethertype: EtherType::Ipv4,
            },
            ip: IpRepr::new_roce(
                "198.18.0.11".parse().unwrap(),
                "198.18.0.2".parse().unwrap(),
                0,
                ecn,
            ),
            udp_src_port: 0xc000,
            bth: bth::Repr {
                opcode: Opcode::RC_ACKNOWLEDGE,
                dest_qpn: 2748,
                psn: Psn::new(5_441_232),
                ..bth::Repr::default()
            },
            ext: ExtRepr {
                aeth: Some(aeth::Repr {
                    syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                    msn: Msn::new(3),
                }),
                ..ExtRepr::default()
            },
            payload_len: 0,
        };
        repr.fill_lengths();
        let mut buf = vec![0u8; repr.frame_len()];
        repr.emit(&[], &mut buf).unwrap();
        buf
    }

    #[test]
    fn summary_names_opcode_psn_qpn_and_nak() {
        let frame = nak_frame(Ecn::Ce);
        let packet = crate::wire::parse_frame(&frame).unwrap();
        assert_eq!(
            summary(&packet),
            "198.18.0.11 > 198.18.0.2 RC Acknowledge (17) QPN 2748 PSN 5441232 len 0 \
             [NAK: PSN sequence error MSN 3] ECN CE"
        );
    }

    #[test]
    fn explain_annotates_syndrome_ecn_and_icrc() {
        let mut frame = nak_frame(Ecn::Ce);
        let text = explain_frame(&frame).unwrap();
        assert!(text.contains("0x60 = NAK: PSN sequence error"), "{text}");
        assert!(
            text.contains("0b11 = CE (congestion experienced)"),
            "{text}"
        );
        assert!(text.contains("invariant CRC: correct"), "{text}");
        assert!(text.contains("header checksum correct"), "{text}");
        let last = frame.len() - 1;
        frame[last] ^= 1;
        let text = explain_frame(&frame).unwrap();
        assert!(text.contains("invariant CRC: WRONG, expected"), "{text}");
    }

    #[test]
    fn explain_without_frame_has_one_line_per_field() {
        let frame = nak_frame(Ecn::NotEct);
        let packet = crate::wire::parse_frame(&frame).unwrap();
        let text = explain(&packet);
        // 3 Ethernet + 10 IPv4 (no raw checksum line) + 3 UDP + 11 BTH + 2 AETH + payload + ICRC.
        assert_eq!(text.lines().count(), 3 + 10 + 3 + 11 + 2 + 2, "{text}");
        assert!(text.contains("0b00 = Not-ECT"), "{text}");
    }

    #[test]
    fn explain_prints_flags_and_extension_fields_in_wire_order() {
        let frame = nak_frame(Ecn::NotEct);
        let mut packet = crate::wire::parse_frame(&frame).unwrap();
        packet.repr.bth.fecn = true;
        packet.repr.bth.ack_req = true;
        packet.repr.ext.deth = Some(crate::wire::deth::Repr {
            qkey: 0x11,
            src_qpn: 7,
        });
        packet.repr.ext.reth = Some(crate::wire::reth::Repr {
            va: 0x1000,
            rkey: 0x22,
            dma_len: 64,
        });
        packet.repr.ext.atomic_eth = Some(crate::wire::atomic_eth::Repr {
            va: 0x2000,
            rkey: 0x33,
            swap_add: 5,
            compare: 6,
        });
        let text = explain(&packet);
        let expected = [
            "BTH       SE             0                    no solicited event",
            "BTH       FECN           1                    forward ECN: congestion seen on the way",
            "BTH       BECN           0                    no backward congestion mark",
            "BTH       AckReq         1                    the responder must acknowledge",
            "DETH      Q_Key          0x00000011           queue key the receiver checks",
            "DETH      source QP      7                    sender's queue pair",
            "RETH      virtual addr   0x1000               remote address to read/write",
            "RETH      R_Key          0x22                 remote key of the memory region",
            "RETH      DMA length     64                   bytes in the whole RDMA operation",
            "AtomicETH virtual addr   0x2000               remote 8-byte word",
            "AtomicETH R_Key          0x33                 remote key",
            "AtomicETH swap/add       5                    value to swap in (CmpSwap) or add (FetchAdd)",
            "AtomicETH compare        6                    value to compare with (CmpSwap)",
        ];
        let at: Vec<usize> = expected
            .iter()
            .map(|line| {
                text.lines()
                    .position(|l| l == *line)
                    .unwrap_or_else(|| panic!("{line}\n{text}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
    }
}
