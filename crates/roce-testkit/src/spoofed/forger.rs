//! The attacker of the spoofed-peer tests: a host on the segment that knows both peers' MAC, IP,
//! QPN and P_Key, watches the real frames on the link, and forges frames with valid ICRCs toward
//! each side as if from the other: real frames with their opcode, PSN, AETH syndrome and MSN,
//! AckReq bit and lengths mutated, storms of ACKs and NAKs, replays of old requests, READ
//! responses and atomic ACKs nobody asked for.
//!
//! It forges from what it saw and from the PSNs it saw, never from either side's internal state.

use std::collections::VecDeque;

use rand::RngExt;
use rand_pcg::Pcg64;
use roce_proto::psn::{Msn, Psn};
use roce_proto::wire::aeth::{self, NakCode, Syndrome};
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::{atomic_ack_eth, atomic_eth, parse_frame, reth, ExtRepr, RoceRepr};

/// Which way a frame travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From A (the requester) to B (the responder).
    AtoB,
    /// From B to A.
    BtoA,
}

/// How often the attacker forges each kind of frame (relative weights; 0 turns a kind off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    /// ACKs toward A with PSNs around, before and far beyond what A sent, any MSN.
    pub acks: u32,
    /// PSN sequence error NAKs toward A.
    pub seq_naks: u32,
    /// RNR NAKs toward A, any timer code.
    pub rnr_naks: u32,
    /// NAKs that end a QP (invalid request, access, operational) and reserved syndromes.
    pub fatal_naks: u32,
    /// READ responses and atomic ACKs toward A, which never posted a READ or atomic.
    pub read_responses: u32,
    /// A's real requests toward B with opcode, PSN, AckReq and length mutated.
    pub requests: u32,
    /// Exact replays of real frames seen earlier, either way (duplicates, stale responses).
    pub replays: u32,
    /// Requests toward A as if from B (A's responder, which B never talks to).
    pub reverse: u32,
    /// Percent of forging events that are a storm (10..=200 frames, PSNs stepping).
    pub storm_percent: u32,
}

impl Mix {
    /// Every kind, fatal NAKs rare (each one ends the run early).
    pub const ALL: Mix = Mix {
        acks: 6,
        seq_naks: 4,
        rnr_naks: 3,
        fatal_naks: 0,
        read_responses: 2,
        requests: 6,
        replays: 3,
        reverse: 1,
        storm_percent: 10,
    };

    /// Responses toward A only.
    pub const RESPONSES: Mix = Mix {
        requests: 0,
        replays: 0,
        reverse: 0,
        ..Mix::ALL
    };

    /// Requests toward B only.
    pub const REQUESTS: Mix = Mix {
        acks: 0,
        seq_naks: 0,
        rnr_naks: 0,
        fatal_naks: 0,
        read_responses: 0,
        reverse: 0,
        ..Mix::ALL
    };

    /// A mix from four bytes (for seeded sweeps and the fuzz target).
    pub fn from_bytes(b: [u8; 4]) -> Mix {
        let w = |x: u8, shift: u32| u32::from((x >> shift) & 0xf);
        Mix {
            acks: w(b[0], 0),
            seq_naks: w(b[0], 4),
            rnr_naks: w(b[1], 0),
            fatal_naks: u32::from(b[1] >> 4 == 0xf),
            read_responses: w(b[2], 0),
            requests: w(b[2], 4),
            replays: w(b[3], 0),
            reverse: u32::from(b[3] >> 6),
            storm_percent: u32::from(b[3] >> 4 & 3) * 10,
        }
    }

    fn total(&self) -> u32 {
        self.acks
            + self.seq_naks
            + self.rnr_naks
            + self.fatal_naks
            + self.read_responses
            + self.requests
            + self.replays
            + self.reverse
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ack,
    SeqNak,
    RnrNak,
    FatalNak,
    ReadResponse,
    Request,
    Replay,
    Reverse,
}

/// A frame seen on the link, parsed once.
#[derive(Clone, Debug)]
struct Seen {
    repr: RoceRepr,
    payload: Vec<u8>,
    frame: Vec<u8>,
}

/// A frame the attacker puts on the link.
#[derive(Clone, Debug)]
pub struct Forged {
    /// The way it goes.
    pub dir: Dir,
    /// The frame, ICRC and all.
    pub frame: Vec<u8>,
    /// An exact copy of a real frame seen earlier.
    pub replay: bool,
}

/// Frames of each direction remembered for mutation and replay.
const REMEMBERED: usize = 64;

/// The attacker.
#[derive(Debug)]
pub struct Forger {
    mix: Mix,
    mtu: usize,
    a_to_b: VecDeque<Seen>,
    b_to_a: VecDeque<Seen>,
    /// The last request PSN seen from A and the last MSN seen from B.
    last_req_psn: Option<Psn>,
    last_msn: Msn,
    /// Frames forged so far.
    pub forged: u64,
}

impl Forger {
    /// An attacker forging `mix` for a link of path MTU `mtu` bytes.
    pub fn new(mix: Mix, mtu: usize) -> Forger {
        Forger {
            mix,
            mtu,
            a_to_b: VecDeque::with_capacity(REMEMBERED),
            b_to_a: VecDeque::with_capacity(REMEMBERED),
            last_req_psn: None,
            last_msn: Msn::new(0),
            forged: 0,
        }
    }

    /// A real frame crossed the link.
    pub fn observe(&mut self, dir: Dir, frame: &[u8]) {
        let Ok(p) = parse_frame(frame) else { return };
        if p.repr.bth.opcode.is_cnp() {
            return;
        }
        let seen = Seen {
            repr: p.repr,
            payload: p.payload.to_vec(),
            frame: frame.to_vec(),
        };
        let ring = match dir {
            Dir::AtoB => {
                if p.repr.bth.opcode.is_request() {
                    self.last_req_psn = Some(p.repr.bth.psn);
                }
                &mut self.a_to_b
            }
            Dir::BtoA => {
                if let Some(a) = p.repr.ext.aeth {
                    self.last_msn = a.msn;
                }
                &mut self.b_to_a
            }
        };
        if ring.len() == REMEMBERED {
            ring.pop_front();
        }
        ring.push_back(seen);
    }

    fn kind(&self, rng: &mut Pcg64) -> Option<Kind> {
        let m = &self.mix;
        let total = m.total();
        if total == 0 {
            return None;
        }
        let mut x = rng.random_range(0..total);
        for (w, k) in [
            (m.acks, Kind::Ack),
            (m.seq_naks, Kind::SeqNak),
            (m.rnr_naks, Kind::RnrNak),
            (m.fatal_naks, Kind::FatalNak),
            (m.read_responses, Kind::ReadResponse),
            (m.requests, Kind::Request),
            (m.replays, Kind::Replay),
            (m.reverse, Kind::Reverse),
        ] {
            if x < w {
                return Some(k);
            }
            x -= w;
        }
        None
    }

    /// One forging event: a frame, or a storm of them, each with the direction it goes.
    pub fn forge(&mut self, rng: &mut Pcg64) -> Vec<Forged> {
        let Some(kind) = self.kind(rng) else {
            return Vec::new();
        };
        let storm = rng.random_range(0..100) < self.mix.storm_percent;
        let n = if storm { rng.random_range(10..=200) } else { 1 };
        // A storm steps its PSNs from one start (forward, backward or not at all).
        let step: i32 = match rng.random_range(0..3) {
            0 => 0,
            1 => 1,
            _ => -1,
        };
        let start = self.pick_psn(rng);
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let psn = if i == 0 || step == 0 {
                start
            } else {
                start.add((step * i as i32) as u32)
            };
            if let Some((dir, frame)) = self.forge_one(kind, psn, rng) {
                let replay = kind == Kind::Replay;
                out.push(Forged { dir, frame, replay });
            }
        }
        self.forged += out.len() as u64;
        out
    }

    /// A PSN near what A has been sending (within its window, just past it, just before it),
    /// far from it, or anything.
    fn pick_psn(&self, rng: &mut Pcg64) -> Psn {
        let Some(base) = self.last_req_psn else {
            return Psn::new(rng.random_range(0..1 << 24));
        };
        match rng.random_range(0..10) {
            0..=3 => base.add(rng.random_range(-8i32..=8) as u32),
            4 | 5 => base.add(rng.random_range(-600i32..=600) as u32),
            6 => base.add(rng.random_range(1u32..=1 << 22)),
            7 => base.sub(rng.random_range(1u32..=1 << 22)),
            8 => base.add(rng.random_range((1u32 << 23) - 8..=(1 << 23) + 8)),
            _ => Psn::new(rng.random_range(0..1 << 24)),
        }
    }

    fn pick_msn(&self, rng: &mut Pcg64) -> Msn {
        match rng.random_range(0..4) {
            0 => self.last_msn,
            1 => Msn::new(
                self.last_msn
                    .value()
                    .wrapping_add(rng.random_range(-4i32..=4) as u32),
            ),
            2 => Msn::new(self.last_msn.value().wrapping_add(1 << 23)),
            _ => Msn::new(rng.random_range(0..1 << 24)),
        }
    }

    fn forge_one(&mut self, kind: Kind, psn: Psn, rng: &mut Pcg64) -> Option<(Dir, Vec<u8>)> {
        match kind {
            Kind::Ack => {
                let syndrome = Syndrome::Ack {
                    credits: rng.random_range(0..32),
                };
                self.response(Opcode::RC_ACKNOWLEDGE, psn, syndrome, rng)
            }
            Kind::SeqNak => {
                let syndrome = Syndrome::Nak(NakCode::PsnSequenceError);
                self.response(Opcode::RC_ACKNOWLEDGE, psn, syndrome, rng)
            }
            Kind::RnrNak => {
                let syndrome = Syndrome::RnrNak {
                    timer: rng.random_range(0..32),
                };
                self.response(Opcode::RC_ACKNOWLEDGE, psn, syndrome, rng)
            }
            Kind::FatalNak => {
                let syndrome = match rng.random_range(0..4) {
                    0 => Syndrome::Nak(NakCode::from_code(rng.random_range(1..32))),
                    _ => Syndrome::from_byte(rng.random_range(0x40..0x60)),
                };
                self.response(Opcode::RC_ACKNOWLEDGE, psn, syndrome, rng)
            }
            Kind::ReadResponse => {
                let opcode = Opcode(rng.random_range(0x0d..=0x12));
                let syndrome = Syndrome::Ack { credits: 31 };
                self.response(opcode, psn, syndrome, rng)
            }
            Kind::Request => self.request(Dir::AtoB, psn, rng),
            Kind::Reverse => self.request(Dir::BtoA, psn, rng),
            Kind::Replay => {
                let (dir, ring) = if rng.random_bool(0.5) {
                    (Dir::AtoB, &self.a_to_b)
                } else {
                    (Dir::BtoA, &self.b_to_a)
                };
                let i = rng.random_range(0..ring.len().max(1));
                ring.get(i).map(|s| (dir, s.frame.clone()))
            }
        }
    }

    /// An ACK or NAK toward A as if from B, for `psn` with `syndrome` and the last MSN seen:
    /// what a scripted test forges by hand (`None` before B has sent anything).
    pub fn ack_toward_a(&self, psn: Psn, syndrome: Syndrome) -> Option<Vec<u8>> {
        let mut repr = self.b_to_a.back()?.repr;
        repr.bth.opcode = Opcode::RC_ACKNOWLEDGE;
        repr.bth.psn = psn;
        repr.ext = ExtRepr {
            aeth: Some(aeth::Repr {
                syndrome,
                msn: self.last_msn,
            }),
            ..ExtRepr::default()
        };
        emit(repr, &[])
    }

    /// A response toward A as if from B: built on a real B→A frame's addresses.
    fn response(
        &self,
        opcode: Opcode,
        psn: Psn,
        syndrome: Syndrome,
        rng: &mut Pcg64,
    ) -> Option<(Dir, Vec<u8>)> {
        let i = rng.random_range(0..self.b_to_a.len().max(1));
        let mut repr = self.b_to_a.get(i)?.repr;
        repr.bth.opcode = opcode;
        repr.bth.psn = psn;
        repr.bth.ack_req = rng.random_bool(0.1);
        let info = opcode.info()?;
        let msn = self.pick_msn(rng);
        repr.ext = ExtRepr {
            aeth: info.aeth().then_some(aeth::Repr { syndrome, msn }),
            atomic_ack_eth: info
                .atomic_ack_eth()
                .then(|| atomic_ack_eth::Repr { orig: rng.random() }),
            ..ExtRepr::default()
        };
        let len = if !info.has_payload {
            0
        } else if opcode.is_first() || opcode.is_middle() || rng.random_bool(0.3) {
            self.mtu
        } else {
            rng.random_range(0..=self.mtu)
        };
        emit(repr, &vec![0x5a; len]).map(|f| (Dir::BtoA, f))
    }

    /// A request toward `dir`'s receiver: a real A→B request, re-addressed for `BtoA`, with
    /// its opcode, PSN, AckReq and payload length mutated.
    fn request(&self, dir: Dir, psn: Psn, rng: &mut Pcg64) -> Option<(Dir, Vec<u8>)> {
        let i = rng.random_range(0..self.a_to_b.len().max(1));
        let seen = self.a_to_b.get(i)?;
        let mut repr = seen.repr;
        let mut payload = seen.payload.clone();
        if dir == Dir::BtoA {
            let back = self.b_to_a.front()?.repr;
            repr.eth = back.eth;
            repr.ip = back.ip;
            repr.udp_src_port = back.udp_src_port;
            repr.bth.dest_qpn = back.bth.dest_qpn;
        }
        repr.bth.psn = psn;
        if rng.random_bool(0.3) {
            repr.bth.ack_req = !repr.bth.ack_req;
        }
        if rng.random_bool(0.5) {
            const REQUESTS: [u8; 19] = [
                0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x13,
                0x14, 0x16, 0x17, 0x04, 0x00,
            ];
            repr.bth.opcode = Opcode(REQUESTS[rng.random_range(0..REQUESTS.len())]);
        }
        let info = repr.bth.opcode.info()?;
        let old = repr.ext;
        repr.ext = ExtRepr {
            reth: info.reth().then(|| {
                old.reth.unwrap_or(reth::Repr {
                    va: rng.random(),
                    rkey: rng.random(),
                    dma_len: [0, 1, self.mtu as u32, rng.random()][rng.random_range(0..4)],
                })
            }),
            atomic_eth: info.atomic_eth().then(|| atomic_eth::Repr {
                va: rng.random::<u64>() & !7,
                rkey: rng.random(),
                swap_add: rng.random(),
                compare: rng.random(),
            }),
            immdt: info.immdt().then(|| rng.random()),
            ieth: info.ieth().then(|| rng.random()),
            ..ExtRepr::default()
        };
        if !info.has_payload {
            payload.clear();
        } else {
            match rng.random_range(0..4) {
                0 => payload.truncate(rng.random_range(0..=payload.len())),
                1 => payload.resize(rng.random_range(0..=self.mtu + 64), 0x5a),
                _ => {}
            }
        }
        emit(repr, &payload).map(|f| (dir, f))
    }
}

/// The frame `repr` with `payload`, lengths and ICRC computed.
fn emit(mut repr: RoceRepr, payload: &[u8]) -> Option<Vec<u8>> {
    repr.payload_len = payload.len();
    repr.fill_lengths();
    let mut buf = vec![0u8; repr.frame_len()];
    let n = repr.emit(payload, &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}
