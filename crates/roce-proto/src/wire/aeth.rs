//! The ACK extended transport header (4 bytes): a syndrome (ACK with credit count, RNR NAK with
//! timer code, or NAK with a code) and the responder's MSN. What to do on a NAK is the requester's
//! business; this module only encodes, decodes and explains the codes (IBTA 9.7.5.1).

use core::fmt;

use super::{read_u24, write_u24};
use crate::psn::Msn;

mod field {
    pub const SYNDROME: usize = 0;
    pub const MSN: usize = 1;
}

/// Length of the AETH.
pub const HEADER_LEN: usize = 4;

/// The credit code meaning "credit count not valid", which rxe always sends.
pub const INVALID_CREDITS: u8 = 0x1f;

/// NAK codes (the low five bits of a `0b011x_xxxx` syndrome).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// 0: a PSN gap; the AETH's PSN is the one the responder expects.
    PsnSequenceError,
    /// 1: invalid request (bad opcode sequence, length, ...).
    InvalidRequest,
    /// 2: remote access error (R_Key, bounds, permissions).
    RemoteAccessError,
    /// 3: remote operational error.
    RemoteOperationalError,
    /// 4: invalid RD request.
    InvalidRdRequest,
    /// A reserved code, kept.
    Unknown(u8),
}

impl NakCode {
    /// From the 5-bit code.
    pub const fn from_code(code: u8) -> Self {
        match code & 0x1f {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            other => NakCode::Unknown(other),
        }
    }

    /// The 5-bit code.
    pub const fn code(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Unknown(other) => other & 0x1f,
        }
    }

    /// What the code means.
    pub const fn meaning(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "PSN sequence error",
            NakCode::InvalidRequest => "invalid request",
            NakCode::RemoteAccessError => "remote access error",
            NakCode::RemoteOperationalError => "remote operational error",
            NakCode::InvalidRdRequest => "invalid RD request",
            NakCode::Unknown(_) => "reserved NAK code",
        }
    }
}

/// The AETH syndrome byte, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// `0b000c_cccc`: positive acknowledgement with a credit code (31 = invalid).
    Ack {
        /// Credit code (5 bits).
        credits: u8,
    },
    /// `0b001t_tttt`: receiver not ready, retry after the time `timer` encodes.
    RnrNak {
        /// RNR timer code (5 bits), see [`rnr_timer_micros`].
        timer: u8,
    },
    /// `0b011n_nnnn`: negative acknowledgement.
    Nak(NakCode),
    /// `0b010x_xxxx` or the top bit set: reserved, kept as the raw byte.
    Reserved(u8),
}

impl Syndrome {
    /// Decodes a syndrome byte (lossless: `to_byte` gives the byte back).
    pub const fn from_byte(byte: u8) -> Self {
        match byte >> 5 {
            0 => Syndrome::Ack {
                credits: byte & 0x1f,
            },
            1 => Syndrome::RnrNak { timer: byte & 0x1f },
            3 => Syndrome::Nak(NakCode::from_code(byte)),
            _ => Syndrome::Reserved(byte),
        }
    }

    /// Encodes the syndrome byte.
    pub const fn to_byte(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(code) => 0x60 | code.code(),
            Syndrome::Reserved(byte) => byte,
        }
    }

    /// An ACK with "credit count not valid", as rxe sends.
    pub const fn ack() -> Self {
        Syndrome::Ack {
            credits: INVALID_CREDITS,
        }
    }

    /// A positive acknowledgement.
    pub const fn is_ack(self) -> bool {
        matches!(self, Syndrome::Ack { .. })
    }

    /// An RNR NAK or a NAK.
    pub const fn is_nak(self) -> bool {
        matches!(self, Syndrome::RnrNak { .. } | Syndrome::Nak(_))
    }
}

/// An ACK with "credit count not valid" ([`Syndrome::ack`]).
impl Default for Syndrome {
    fn default() -> Self {
        Syndrome::ack()
    }
}

impl fmt::Display for Syndrome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Syndrome::Ack { credits } => match credit_count(credits) {
                Some(n) => write!(f, "ACK, {n} credits"),
                None => f.write_str("ACK, credit count not valid"),
            },
            Syndrome::RnrNak { timer } => {
                let us = rnr_timer_micros(timer);
                write!(
                    f,
                    "RNR NAK, retry after {}.{:02} ms",
                    us / 1000,
                    us % 1000 / 10
                )
            }
            Syndrome::Nak(code) => write!(f, "NAK: {}", code.meaning()),
            Syndrome::Reserved(_) => f.write_str("reserved syndrome"),
        }
    }
}

/// The number of message credits a 5-bit credit code grants (IBTA table 46); `None` for 31.
pub const fn credit_count(code: u8) -> Option<u32> {
    match code & 0x1f {
        0 => Some(0),
        31 => None,
        1 => Some(1),
        c => {
            // 2, 3, 4, 6, 8, 12, 16, ...: even codes are powers of two, odd codes 1.5 times one.
            let c = c as u32;
            if c % 2 == 0 {
                Some(1 << (c / 2))
            } else {
                Some(3 << ((c - 3) / 2))
            }
        }
    }
}

/// The minimum RNR NAK delay a 5-bit timer code asks for, in microseconds (IBTA table 45).
pub const fn rnr_timer_micros(code: u8) -> u32 {
    const TABLE: [u32; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560,
        3_840, 5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880,
        163_840, 245_760, 327_680, 491_520,
    ];
    TABLE[(code & 0x1f) as usize]
}

fixed_header! {
    /// A parsed AETH.
    pub struct Repr {
        /// The decoded syndrome.
        pub syndrome: Syndrome {
            at: field::SYNDROME, read: read_syndrome, write: write_syndrome, set: set_syndrome
        },
        /// Message sequence number.
        pub msn: Msn { at: field::MSN, read: read_msn, write: write_msn, set: set_msn },
    }
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The raw syndrome byte.
    pub fn syndrome_byte(&self) -> u8 {
        self.buffer.as_ref()[field::SYNDROME]
    }
}

// The codecs of the two typed fields, for `fixed_header!`.

fn read_syndrome(buffer: &[u8], at: usize) -> Syndrome {
    Syndrome::from_byte(buffer[at])
}

fn write_syndrome(buffer: &mut [u8], at: usize, value: Syndrome) {
    buffer[at] = value.to_byte();
}

fn read_msn(buffer: &[u8], at: usize) -> Msn {
    Msn::new(read_u24(buffer, at))
}

fn write_msn(buffer: &mut [u8], at: usize, value: Msn) {
    write_u24(buffer, at, value.value());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::WireError;

    #[test]
    fn syndrome_bytes_from_the_vectors_decode() {
        assert_eq!(Syndrome::from_byte(0x1f), Syndrome::ack());
        assert_eq!(
            Syndrome::from_byte(0x60),
            Syndrome::Nak(NakCode::PsnSequenceError)
        );
        assert_eq!(Syndrome::from_byte(0x2c), Syndrome::RnrNak { timer: 12 });
        assert_eq!(
            Syndrome::from_byte(0x62),
            Syndrome::Nak(NakCode::RemoteAccessError)
        );
        assert_eq!(Syndrome::from_byte(0x45), Syndrome::Reserved(0x45));
    }

    #[test]
    fn syndrome_roundtrips_every_byte() {
        for b in 0..=255u8 {
            assert_eq!(Syndrome::from_byte(b).to_byte(), b, "{b:#04x}");
        }
    }

    #[test]
    fn syndromes_explain_themselves() {
        assert_eq!(
            Syndrome::from_byte(0x60).to_string(),
            "NAK: PSN sequence error"
        );
        assert_eq!(
            Syndrome::from_byte(0x2c).to_string(),
            "RNR NAK, retry after 0.64 ms"
        );
        assert_eq!(
            Syndrome::from_byte(0x1f).to_string(),
            "ACK, credit count not valid"
        );
        assert_eq!(Syndrome::from_byte(0x05).to_string(), "ACK, 6 credits");
    }

    #[test]
    fn credit_codes_follow_the_ibta_table() {
        let expected = [0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
        for (code, want) in expected.iter().enumerate() {
            assert_eq!(credit_count(code as u8), Some(*want), "code {code}");
        }
        assert_eq!(credit_count(30), Some(32768));
        assert_eq!(credit_count(31), None);
    }

    #[test]
    fn default_is_an_ack_without_credits() {
        assert_eq!(Repr::default().syndrome.to_byte(), 0x1f);
        assert_eq!(Repr::default().msn, Msn::new(0));
    }

    #[test]
    fn header_both_ways() {
        let bytes = [0x60, 0x00, 0x01, 0x02];
        let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            Repr {
                syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                msn: Msn::new(0x102)
            }
        );
        let mut buf = [0xa5u8; 5];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [0x60, 0x00, 0x01, 0x02, 0xa5]);
        assert_eq!(Packet::new_checked(&buf[..3]), Err(WireError::Truncated));
    }
}
