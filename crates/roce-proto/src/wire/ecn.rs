//! The two ECN bits of the IP header (RFC 3168). A switch sets `Ce` instead of dropping; the
//! ICRC masks these bits, so marking does not break RoCEv2 packets. Marking policy lives elsewhere.

use core::fmt;

/// Explicit Congestion Notification codepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Ecn {
    /// 0b00: the sender does not support ECN.
    #[default]
    NotEct = 0,
    /// 0b01: ECN-capable transport, codepoint 1.
    Ect1 = 1,
    /// 0b10: ECN-capable transport, codepoint 0 (what RoCEv2 senders use).
    Ect0 = 2,
    /// 0b11: congestion experienced, set by a switch.
    Ce = 3,
}

impl Ecn {
    /// The bits ECN takes in a traffic-class byte (the IPv4 TOS, the IPv6 traffic class): the low
    /// two; DSCP takes the other six.
    pub const MASK: u8 = 0b11;

    /// The codepoint from the low two bits of `bits` (e.g. a traffic-class byte).
    pub const fn from_bits(bits: u8) -> Self {
        match bits & Self::MASK {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two-bit codepoint.
    pub const fn bits(self) -> u8 {
        self as u8
    }

    /// `traffic_class` with its ECN bits replaced by this codepoint (DSCP kept).
    pub const fn apply(self, traffic_class: u8) -> u8 {
        (traffic_class & !Self::MASK) | self.bits()
    }

    /// ECN-capable (ECT(0), ECT(1) or CE): a switch may mark it instead of dropping.
    pub const fn is_capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }

    /// What the codepoint means, for annotated dumps.
    pub const fn meaning(self) -> &'static str {
        match self {
            Ecn::NotEct => "Not-ECT (sender does not do ECN)",
            Ecn::Ect1 => "ECT(1) (ECN-capable transport)",
            Ecn::Ect0 => "ECT(0) (ECN-capable transport)",
            Ecn::Ce => "CE (congestion experienced)",
        }
    }
}

/// The traffic-class byte (IPv4 TOS, IPv6 traffic class) of `dscp` (six bits, higher ones
/// dropped) and `ecn`.
pub const fn traffic_class(dscp: u8, ecn: Ecn) -> u8 {
    ((dscp & 0x3f) << 2) | ecn.bits()
}

/// The DSCP of a traffic-class byte.
pub const fn dscp(traffic_class: u8) -> u8 {
    traffic_class >> 2
}

impl fmt::Display for Ecn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ecn::NotEct => "Not-ECT",
            Ecn::Ect1 => "ECT(1)",
            Ecn::Ect0 => "ECT(0)",
            Ecn::Ce => "CE",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_class_packs_dscp_above_ecn() {
        assert_eq!(traffic_class(26, Ecn::Ect0), 0x6a);
        assert_eq!(traffic_class(0xff, Ecn::Ce), 0xff);
        assert_eq!(dscp(0x6b), 26);
        assert_eq!(Ecn::from_bits(0x6b), Ecn::Ce);
    }

    #[test]
    fn apply_replaces_only_the_ecn_bits() {
        assert_eq!(Ecn::Ce.apply(0x6a), 0x6b);
        assert_eq!(Ecn::NotEct.apply(0xff), 0xfc);
        assert_eq!(Ecn::Ect1.apply(0x00), 0x01);
    }
}
