//! A hostile neighbour against a [`ResolvingEndpoint`]: ARP and NDP frames (well-formed or with one
//! byte changed), RoCE frames carrying INT shims, and raw bytes, interleaved with timers, lookups
//! and drains. Actions are decoded from bytes, so the proptest in roce-proto's
//! `tests/it/hostile_props.rs` and the cargo-fuzz target `fuzz/fuzz_targets/host.rs` drive the same
//! thing. Invariants: nothing panics, a drain ends, and what one drain sends is bounded by the
//! reply queues' limits.
//!
//! Depends on `roce_proto` only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use roce_proto::arp;
use roce_proto::connect::RcOptions;
use roce_proto::endpoint::EndpointConfig;
use roce_proto::engine::Engine;
use roce_proto::ndp;
use roce_proto::psn::Psn;
use roce_proto::resolving::{PeerQp, ResolvingEndpoint};
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::QpInit;
use roce_proto::wire::arp::{self as arp_wire, ArpRepr, Operation};
use roce_proto::wire::int::{self, HopRecord, Repr};
use roce_proto::wire::ndp::{self as ndp_wire, NdpRepr};
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::{
    bth, ethernet, reth, Ecn, EtherType, EthernetAddress, ExtRepr, IpRepr, RoceRepr,
};

use crate::action_bytes;

/// Bytes one action is decoded from.
pub const ACTION_BYTES: usize = 8;

const MAC_US: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0xb]);
const IP_US: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);
const IP6_US: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xb);
const IP_PEER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 10);
/// Frames one drain may honestly send: both reply queues, an announcement, our own requests and
/// solicitations (one per lookup action at most), and the endpoint's few frames.
const DRAIN_BOUND: usize = arp::MAX_QUEUED_REPLIES + ndp::MAX_QUEUED_REPLIES + 512;
/// Copies of a frame in a flood (each from the next sender).
const FLOOD: u8 = 100;

/// `copies` neighbour frames from consecutive senders from `sender` on, each with byte `flip`
/// xored with `val`.
#[derive(Clone, Copy, Debug)]
pub struct Flood {
    sender: u8,
    flip: u8,
    val: u8,
    copies: u8,
}

impl Flood {
    /// The flood bytes 2, 4, 5 and 6 of `b` encode.
    fn decode(b: &[u8; ACTION_BYTES]) -> Flood {
        Flood {
            sender: b[2],
            flip: b[4],
            val: b[5],
            copies: if b[6] % 4 == 0 { FLOOD } else { 1 },
        }
    }
}

/// One step of the neighbour, or of the host's owner.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// A flood of ARP packets (`op` 1 request, 2 reply, else other).
    Arp {
        /// 1 request, 2 reply, else another operation.
        op: u8,
        /// Whether the target address is ours.
        target_us: bool,
        /// How many, and the damage.
        flood: Flood,
    },
    /// A flood of neighbour solicitations (or advertisements) for us or another address.
    Ndp {
        /// Advertisements, else solicitations.
        advert: bool,
        /// Whether the target address is ours.
        for_us: bool,
        /// How many, and the damage.
        flood: Flood,
    },
    /// A RoCE frame to the host carrying an INT shim (echo or collecting), maybe damaged.
    Int {
        /// An echo of hop records, else a shim collecting them.
        echo: bool,
        /// Hop records in the shim.
        hops: u8,
        /// The byte changed (`val` 0 leaves the frame intact).
        flip: u8,
        /// What the byte is xored with.
        val: u8,
    },
    /// Raw bytes of the given length from a pattern.
    Raw {
        /// Bytes.
        len: u8,
        /// The pattern's seed.
        seed: u8,
    },
    /// The owner asks for an address (ARP or NDP lookup).
    Resolve {
        /// An IPv6 address (NDP), else IPv4 (ARP).
        v6: bool,
        /// The address's last byte (198.18.0.`host`, 2001:db8::1:`host`).
        host: u8,
    },
    /// Time passes.
    Advance {
        /// Nanoseconds.
        nanos: u64,
    },
    /// Drain `poll_transmit`.
    Poll,
}

impl Action {
    /// The action `b` encodes.
    pub fn decode(b: &[u8; ACTION_BYTES]) -> Action {
        match b[0] % 8 {
            0 | 1 => Action::Arp {
                op: b[1] % 4,
                target_us: b[3] & 1 == 1,
                flood: Flood::decode(b),
            },
            2 => Action::Ndp {
                advert: b[1] & 1 == 1,
                for_us: b[3] & 1 == 1,
                flood: Flood::decode(b),
            },
            3 => Action::Int {
                echo: b[1] & 1 == 1,
                hops: b[2] % 6,
                flip: b[3],
                val: b[4],
            },
            4 => Action::Raw {
                len: b[1],
                seed: b[2],
            },
            5 => Action::Resolve {
                v6: b[1] & 1 == 1,
                host: b[2],
            },
            6 => Action::Advance {
                nanos: (u64::from(b[1]) + 1) << (b[2] % 34),
            },
            _ => Action::Poll,
        }
    }

    /// The actions a byte string encodes.
    pub fn decode_all(data: &[u8]) -> Vec<Action> {
        action_bytes::decode_chunks(data, Action::decode)
    }
}

/// An ARP packet (`op` 1 request, 2 reply, else other) from `sender` into `buf`; its length.
fn arp_frame(op: u8, sender: u8, target_us: bool, buf: &mut [u8]) -> Result<usize, String> {
    let sender_ip = Ipv4Addr::new(198, 18, 0, sender);
    let arp = ArpRepr {
        operation: Operation::from(u16::from(op)),
        sender_mac: EthernetAddress([2, 0, 0, 1, 0, sender]),
        sender_ip,
        target_mac: if op == 2 {
            MAC_US
        } else {
            EthernetAddress([0; 6])
        },
        target_ip: if target_us {
            IP_US
        } else {
            Ipv4Addr::new(198, 18, 1, 1)
        },
    };
    let dst = if op == 2 {
        MAC_US
    } else {
        EthernetAddress::BROADCAST
    };
    arp_wire::emit_frame(&arp, arp.sender_mac, dst, None, buf).map_err(|e| e.to_string())
}

/// A neighbour solicitation (or advertisement) from `sender` for us or another address into
/// `buf`; its length.
fn ndp_frame(advert: bool, sender: u8, for_us: bool, buf: &mut [u8]) -> Result<usize, String> {
    let src = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 1, u16::from(sender));
    let mac = EthernetAddress([2, 0, 0, 2, 0, sender]);
    let target = if for_us { IP6_US } else { src };
    let msg = if advert {
        NdpRepr::Advert {
            router: false,
            solicited: true,
            override_cache: true,
            target: src,
            target_mac: Some(mac),
        }
    } else {
        NdpRepr::Solicit {
            target,
            source_mac: Some(mac),
        }
    };
    ndp_wire::emit_frame(&msg, mac, MAC_US, src, IP6_US, buf).map_err(|e| e.to_string())
}

/// Changes one byte (`flip` 0 leaves the frame whole).
fn damage(frame: &mut [u8], flip: u8, val: u8) {
    if flip != 0 && !frame.is_empty() {
        let i = usize::from(flip) % frame.len();
        frame[i] ^= val;
    }
}

/// A host with IPv4 and IPv6 and one QP waiting for its peer's MAC.
pub struct HostHarness {
    host: ResolvingEndpoint,
    now: Instant,
    qpn: u32,
}

impl Default for HostHarness {
    fn default() -> Self {
        HostHarness::new()
    }
}

impl HostHarness {
    /// The host, with a QP whose peer's MAC is left to ARP.
    pub fn new() -> HostHarness {
        let mut host = ResolvingEndpoint::new(EndpointConfig {
            ipv6: Some(IP6_US),
            key_seed: Some(15),
            ..EndpointConfig::ipv4(MAC_US, IP_US)
        });
        let ep = host.endpoint_mut();
        let pd = ep.alloc_pd();
        let cq = ep.create_cq(16);
        let init = QpInit::shared_cq(pd, cq, 4, 4);
        let qpn = ep.create_qp(init).expect("a QP");
        let peer = PeerQp {
            ip: IP_PEER.into(),
            mac: None,
            qpn: 0x99,
            psn: Psn::new(0),
        };
        let _ = host.connect_qp(
            Instant::ZERO,
            qpn,
            &peer,
            Psn::new(0),
            &RcOptions::default(),
        );
        HostHarness {
            host,
            now: Instant::ZERO,
            qpn,
        }
    }

    /// Runs the actions `data` encodes, checking after each (what the proptest and the fuzz
    /// target feed it).
    pub fn run_bytes(data: &[u8]) -> Result<(), String> {
        let mut h = HostHarness::new();
        action_bytes::run_steps(&Action::decode_all(data), |a| h.step(a))?;
        h.drain()
    }

    /// One action.
    pub fn step(&mut self, a: &Action) -> Result<(), String> {
        match *a {
            Action::Arp {
                op,
                target_us,
                flood,
            } => self.flood(flood, |s, buf| arp_frame(op, s, target_us, buf))?,
            Action::Ndp {
                advert,
                for_us,
                flood,
            } => self.flood(flood, |s, buf| ndp_frame(advert, s, for_us, buf))?,
            Action::Int {
                echo,
                hops,
                flip,
                val,
            } => {
                let mut f = self.roce_frame(echo);
                let len = f.len();
                let hop = HopRecord {
                    ts_ns: 1,
                    tx_bytes: 2,
                    qlen_bytes: 3,
                    rate_bps: 4,
                };
                let records = vec![hop; usize::from(hops)];
                let shim = if echo {
                    Repr::echo_of(&records, 1)
                } else {
                    Repr::collect(hops.max(1), 1)
                };
                f.resize(len + int::shim_len(int::MAX_HOPS as u8), 0);
                let n = int::insert(&mut f, len, &shim).map_err(|e| e.to_string())?;
                self.hand_damaged(&mut f[..n], flip, val);
            }
            Action::Raw { len, seed } => {
                let frame: Vec<u8> = (0..usize::from(len))
                    .map(|i| (i as u8).wrapping_mul(seed).wrapping_add(seed))
                    .collect();
                self.host.handle_frame(self.now, &frame);
            }
            Action::Resolve { v6, host } => {
                let ip: IpAddr = if v6 {
                    Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 1, u16::from(host)).into()
                } else {
                    Ipv4Addr::new(198, 18, 0, host).into()
                };
                let _ = self.host.resolve(self.now, ip);
            }
            Action::Advance { nanos } => {
                self.now += Duration::from_nanos(nanos);
                self.host.handle_timeout(self.now);
            }
            Action::Poll => self.drain()?,
        }
        while self.host.poll_event().is_some() {}
        Ok(())
    }

    /// The frames of `f`, each built by `frame` for its sender (returning its length), handed to
    /// the host.
    fn flood(
        &mut self,
        f: Flood,
        frame: impl Fn(u8, &mut [u8]) -> Result<usize, String>,
    ) -> Result<(), String> {
        for i in 0..f.copies {
            let mut buf = [0u8; 256];
            let n = frame(f.sender.wrapping_add(i), &mut buf)?;
            self.hand_damaged(&mut buf[..n], f.flip, f.val);
        }
        Ok(())
    }

    /// Hands `frame` to the host with byte `flip` xored with `val`.
    fn hand_damaged(&mut self, frame: &mut [u8], flip: u8, val: u8) {
        damage(frame, flip, val);
        self.host.handle_frame(self.now, frame);
    }

    /// A RoCE WRITE (or, for an echo, an ACK) from the peer to our QP.
    fn roce_frame(&self, ack: bool) -> Vec<u8> {
        let (opcode, ext) = if ack {
            (
                Opcode::RC_ACKNOWLEDGE,
                ExtRepr {
                    aeth: Some(roce_proto::wire::aeth::Repr {
                        syndrome: roce_proto::wire::aeth::Syndrome::Ack { credits: 31 },
                        msn: roce_proto::psn::Msn::new(0),
                    }),
                    ..Default::default()
                },
            )
        } else {
            (
                Opcode::RC_RDMA_WRITE_ONLY,
                ExtRepr {
                    reth: Some(reth::Repr {
                        va: 0,
                        rkey: 0,
                        dma_len: 0,
                    }),
                    ..Default::default()
                },
            )
        };
        let mut repr = RoceRepr {
            eth: ethernet::Repr {
                dst: MAC_US,
                src: EthernetAddress([2, 0, 0, 1, 0, 10]),
                vlan: None,
                ethertype: EtherType::Ipv4,
            },
            ip: IpRepr::new_roce(IP_PEER.into(), IP_US.into(), 0, Ecn::Ect0),
            udp_src_port: 0xc001,
            bth: bth::Repr {
                opcode,
                dest_qpn: self.qpn,
                psn: Psn::new(0),
                ..bth::Repr::default()
            },
            ext,
            payload_len: 0,
        };
        repr.fill_lengths();
        let mut buf = vec![0u8; repr.frame_len()];
        let n = repr.emit(&[], &mut buf).unwrap_or(0);
        buf.truncate(n);
        buf
    }

    fn drain(&mut self) -> Result<(), String> {
        let mut buf = vec![0u8; 9000];
        let (mut frames, mut replies, mut adverts) = (0usize, 0usize, 0usize);
        while let Some(n) = self.host.poll_transmit(self.now, &mut buf) {
            frames += 1;
            if frames > DRAIN_BOUND {
                return Err(format!("more than {DRAIN_BOUND} frames in one drain"));
            }
            let frame = buf.get(..n).ok_or("length beyond the buffer")?;
            if let Ok((_, a)) = arp_wire::parse_frame(frame) {
                replies += usize::from(a.operation == Operation::Reply);
            }
            if let Ok(f) = ndp_wire::parse_frame(frame) {
                adverts += usize::from(matches!(f.ndp, NdpRepr::Advert { .. }));
            }
        }
        if replies > arp::MAX_QUEUED_REPLIES || adverts > ndp::MAX_QUEUED_REPLIES {
            return Err(format!(
                "{replies} ARP replies, {adverts} NDP adverts in one drain"
            ));
        }
        Ok(())
    }
}
