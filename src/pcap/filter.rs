//! Which RoCEv2 frames a listing shows: by opcode, destination QPN, PSN range and ECN codepoint
//! (`roce pcap check --opcode write --qpn 0x11 --psn 100..200 --ecn ce`).
//!
//! Every given criterion must hold (AND); a criterion given several values matches any of them
//! (OR). Frames that are not RoCEv2 never match a filter that has a criterion.

use std::str::FromStr;

use roce_proto::wire::aeth::Syndrome;
use roce_proto::wire::{Ecn, Opcode, RocePacket};

/// Why a filter term was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// Not an opcode number, name or class.
    #[error("`{0}` is not an opcode (a number like 0x0a, a name like rc-rdma-write-only, or one of send, write, read-request, read-response, read, ack, nak, atomic, atomic-ack, cnp)")]
    Opcode(String),
    /// Not a number (decimal or 0x hex) below 2^24.
    #[error("`{0}` is not a 24-bit number (decimal or 0x hex)")]
    Number(String),
    /// Not `A`, `A..B` or `A-B`.
    #[error("`{0}` is not a PSN or PSN range (like 100, 100..200 or 0xfffff0..0x10, which wraps)")]
    Range(String),
    /// Not an ECN codepoint.
    #[error("`{0}` is not an ECN codepoint (ce, ect0, ect1, not-ect, or ect for any capable)")]
    Ecn(String),
}

/// Opcodes a term matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpcodeMatch {
    /// This one opcode.
    Exact(Opcode),
    /// SEND of any kind.
    Send,
    /// RDMA WRITE of any kind.
    Write,
    /// RDMA READ request.
    ReadRequest,
    /// RDMA READ response packets.
    ReadResponse,
    /// READ requests and responses.
    Read,
    /// Acknowledge packets (ACK and NAK).
    Ack,
    /// Acknowledge packets whose AETH is a NAK or RNR NAK.
    Nak,
    /// Compare-and-swap and fetch-and-add requests.
    Atomic,
    /// Atomic acknowledge.
    AtomicAck,
    /// Congestion notification packets.
    Cnp,
}

/// Lowercase letters and digits only, so `RC SEND Only`, `rc-send-only` and `RC_SEND_ONLY` meet.
fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A decimal or `0x` hex number below 2^24 (QPNs and PSNs).
fn number24(s: &str) -> Result<u32, FilterError> {
    let t = s.trim();
    let n = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => t.parse(),
    };
    n.ok()
        .filter(|&n| n < 1 << 24)
        .ok_or_else(|| FilterError::Number(s.to_string()))
}

impl FromStr for OpcodeMatch {
    type Err = FilterError;
    fn from_str(s: &str) -> Result<Self, FilterError> {
        let bad = || FilterError::Opcode(s.to_string());
        let t = s.trim();
        if t.starts_with(|c: char| c.is_ascii_digit()) {
            let n = number24(t).map_err(|_| bad())?;
            return u8::try_from(n)
                .map(|b| OpcodeMatch::Exact(Opcode(b)))
                .map_err(|_| bad());
        }
        Ok(match squash(t).as_str() {
            "send" => OpcodeMatch::Send,
            "write" => OpcodeMatch::Write,
            "readrequest" => OpcodeMatch::ReadRequest,
            "readresponse" => OpcodeMatch::ReadResponse,
            "read" => OpcodeMatch::Read,
            "ack" => OpcodeMatch::Ack,
            "nak" => OpcodeMatch::Nak,
            "atomic" => OpcodeMatch::Atomic,
            "atomicack" => OpcodeMatch::AtomicAck,
            "cnp" => OpcodeMatch::Cnp,
            name => (0..=u8::MAX)
                .map(Opcode)
                .find(|o| o.info().is_some() && squash(o.name()) == name)
                .map(OpcodeMatch::Exact)
                .ok_or_else(bad)?,
        })
    }
}

impl OpcodeMatch {
    /// Whether `p` is one of the opcodes this term names.
    pub fn matches(self, p: &RocePacket<'_>) -> bool {
        let op = p.repr.bth.opcode;
        match self {
            OpcodeMatch::Exact(o) => op == o,
            OpcodeMatch::Send => op.is_send(),
            OpcodeMatch::Write => op.is_write(),
            OpcodeMatch::ReadRequest => op.is_read_request(),
            OpcodeMatch::ReadResponse => op.is_read_response(),
            OpcodeMatch::Read => op.is_read_request() || op.is_read_response(),
            OpcodeMatch::Ack => op.is_ack(),
            OpcodeMatch::Nak => {
                op.is_ack()
                    && p.repr.ext.aeth.is_some_and(|a| {
                        matches!(a.syndrome, Syndrome::Nak(_) | Syndrome::RnrNak { .. })
                    })
            }
            OpcodeMatch::Atomic => op.is_atomic(),
            OpcodeMatch::AtomicAck => op.is_atomic_ack(),
            OpcodeMatch::Cnp => op.is_cnp(),
        }
    }
}

/// An inclusive PSN range; `first > last` wraps through 2^24 - 1 to 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsnRange {
    /// First PSN in the range.
    pub first: u32,
    /// Last PSN in the range.
    pub last: u32,
}

impl FromStr for PsnRange {
    type Err = FilterError;
    fn from_str(s: &str) -> Result<Self, FilterError> {
        let bad = || FilterError::Range(s.to_string());
        let (a, b) = s
            .split_once("..")
            .or_else(|| s.split_once('-'))
            .unwrap_or((s, s));
        let b = b.strip_prefix('=').unwrap_or(b);
        Ok(PsnRange {
            first: number24(a).map_err(|_| bad())?,
            last: number24(b).map_err(|_| bad())?,
        })
    }
}

impl PsnRange {
    /// Whether `psn` lies in the range.
    pub fn contains(self, psn: u32) -> bool {
        if self.first <= self.last {
            (self.first..=self.last).contains(&psn)
        } else {
            psn >= self.first || psn <= self.last
        }
    }
}

/// ECN codepoints a term matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnMatch {
    /// This codepoint.
    Is(Ecn),
    /// ECT(0), ECT(1) or CE.
    Capable,
}

impl FromStr for EcnMatch {
    type Err = FilterError;
    fn from_str(s: &str) -> Result<Self, FilterError> {
        Ok(match squash(s).as_str() {
            "ce" | "3" => EcnMatch::Is(Ecn::Ce),
            "ect0" | "2" => EcnMatch::Is(Ecn::Ect0),
            "ect1" | "1" => EcnMatch::Is(Ecn::Ect1),
            "notect" | "0" => EcnMatch::Is(Ecn::NotEct),
            "ect" => EcnMatch::Capable,
            _ => return Err(FilterError::Ecn(s.to_string())),
        })
    }
}

impl EcnMatch {
    /// Whether the codepoint `ecn` is one this term names.
    pub fn matches(self, ecn: Ecn) -> bool {
        match self {
            EcnMatch::Is(e) => e == ecn,
            EcnMatch::Capable => ecn.is_capable(),
        }
    }
}

/// All criteria of a listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameFilter {
    /// Opcodes (any of them).
    pub opcodes: Vec<OpcodeMatch>,
    /// Destination QPNs (any of them).
    pub qpns: Vec<u32>,
    /// PSN ranges (any of them).
    pub psns: Vec<PsnRange>,
    /// ECN codepoints (any of them).
    pub ecn: Vec<EcnMatch>,
}

/// Parses a destination QPN (decimal or `0x` hex), for command lines.
pub fn parse_qpn(s: &str) -> Result<u32, FilterError> {
    number24(s)
}

impl FrameFilter {
    /// Whether no criterion is set (everything matches, non-RoCE frames too).
    pub fn is_empty(&self) -> bool {
        self.opcodes.is_empty()
            && self.qpns.is_empty()
            && self.psns.is_empty()
            && self.ecn.is_empty()
    }

    /// Whether a RoCEv2 packet passes every criterion.
    pub fn matches(&self, p: &RocePacket<'_>) -> bool {
        let bth = &p.repr.bth;
        let any = |empty: bool, hit: bool| empty || hit;
        any(
            self.opcodes.is_empty(),
            self.opcodes.iter().any(|o| o.matches(p)),
        ) && any(self.qpns.is_empty(), self.qpns.contains(&bth.dest_qpn))
            && any(
                self.psns.is_empty(),
                self.psns.iter().any(|r| r.contains(bth.psn.value())),
            )
            && any(
                self.ecn.is_empty(),
                self.ecn.iter().any(|e| e.matches(p.repr.ip.ecn())),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_terms_take_numbers_names_and_classes() {
        assert_eq!("0x0a".parse(), Ok(OpcodeMatch::Exact(Opcode(0x0a))));
        assert_eq!("10".parse(), Ok(OpcodeMatch::Exact(Opcode(0x0a))));
        assert_eq!(
            "rc-rdma-write-only".parse(),
            Ok(OpcodeMatch::Exact(Opcode::RC_RDMA_WRITE_ONLY))
        );
        assert_eq!(
            "RC SEND Only".parse(),
            Ok(OpcodeMatch::Exact(Opcode::RC_SEND_ONLY))
        );
        assert_eq!("CNP".parse(), Ok(OpcodeMatch::Cnp));
        assert_eq!("read-response".parse(), Ok(OpcodeMatch::ReadResponse));
        assert!("teleport".parse::<OpcodeMatch>().is_err());
        assert!("300".parse::<OpcodeMatch>().is_err());
    }

    #[test]
    fn psn_ranges_are_inclusive_and_may_wrap() {
        let r: PsnRange = "100..200".parse().unwrap();
        assert!(r.contains(100) && r.contains(200) && !r.contains(99) && !r.contains(201));
        assert_eq!("7".parse(), Ok(PsnRange { first: 7, last: 7 }));
        assert_eq!("5-9".parse(), Ok(PsnRange { first: 5, last: 9 }));
        assert_eq!("5..=9".parse(), Ok(PsnRange { first: 5, last: 9 }));
        let w: PsnRange = "0xfffff0..0x10".parse().unwrap();
        assert!(w.contains(0xffffff) && w.contains(0) && w.contains(0x10) && !w.contains(0x11));
        assert!("1..".parse::<PsnRange>().is_err());
        assert!("0x1000000".parse::<PsnRange>().is_err());
    }

    #[test]
    fn ecn_terms_name_codepoints() {
        assert_eq!("CE".parse(), Ok(EcnMatch::Is(Ecn::Ce)));
        assert_eq!("ECT(0)".parse(), Ok(EcnMatch::Is(Ecn::Ect0)));
        assert_eq!("not-ect".parse(), Ok(EcnMatch::Is(Ecn::NotEct)));
        assert!(EcnMatch::Capable.matches(Ecn::Ce) && !EcnMatch::Capable.matches(Ecn::NotEct));
        assert!("red".parse::<EcnMatch>().is_err());
    }
}
