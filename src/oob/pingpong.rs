//! ibv_rc_pingpong's exchange (rdma-core libibverbs/examples/rc_pingpong.c, pp_*_exch_dest):
//! one 52-byte message each way, `sprintf("%04x:%06x:%06x:%s", lid, qpn, psn, gid32hex)` plus
//! its NUL, then the client's `"done"` plus NUL. Encoding and decoding only; the TCP sequence is
//! in [`super::tcp::pingpong_client`] / [`super::tcp::pingpong_server`].
//!
//! Sequence (client = the side given a host name): client connects and sends its message; the
//! server moves its QP to RTR and RTS (rxe ARPs for the client here: answer ARP first) and
//! replies in kind; the client sends `done\0` and closes. rc_pingpong only uses the GID (and so
//! a GRH) when its interface id (last 8 bytes) is non-zero; on RoCE it always is.

use std::net::Ipv6Addr;

use super::{c_string, gid_from_hex, gid_to_hex, hex_field, printable, DecodeError};
use roce_proto::psn::{Psn, PSN_MASK};

/// Size of the message, NUL included: `sizeof "0000:000000:000000:" + 32 hex digits`.
pub const MESSAGE_LEN: usize = 52;
/// What the client sends last.
pub const DONE: &[u8; 5] = b"done\0";

const WHAT: &str = "rc_pingpong message";

/// One side's connection data as rc_pingpong exchanges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingpongDest {
    /// LID (0 on RoCE).
    pub lid: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// First PSN the sender will use.
    pub psn: Psn,
    /// GID, e.g. `::ffff:198.18.0.12` for a RoCEv2 IPv4 GID.
    pub gid: Ipv6Addr,
}

impl PingpongDest {
    /// The 52 bytes rc_pingpong writes (QPN masked to 24 bits).
    pub fn encode(&self) -> [u8; MESSAGE_LEN] {
        let text = format!(
            "{:04x}:{:06x}:{:06x}:{}",
            self.lid,
            self.qpn & PSN_MASK,
            self.psn.value(),
            gid_to_hex(self.gid)
        );
        let mut msg = [0u8; MESSAGE_LEN];
        // The text is always 51 ASCII bytes; the 52nd stays NUL.
        for (dst, src) in msg.iter_mut().zip(text.bytes()) {
            *dst = src;
        }
        msg
    }

    /// Parses the 52 bytes (strict: exact widths are not required, but every field must be hex,
    /// in range, and the GID must have 32 digits).
    pub fn decode(msg: &[u8]) -> Result<Self, DecodeError> {
        let text = c_string(WHAT, msg, MESSAGE_LEN)?;
        let mut parts = text.split(':');
        let lid = hex_field(WHAT, "lid", parts.next(), 0xffff)?;
        let qpn = hex_field(WHAT, "qpn", parts.next(), u64::from(PSN_MASK))?;
        let psn = hex_field(WHAT, "psn", parts.next(), u64::from(PSN_MASK))?;
        let gid_text = parts.next().unwrap_or("");
        let gid = gid_from_hex(gid_text)
            .filter(|_| parts.next().is_none())
            .ok_or_else(|| DecodeError::Field {
                what: WHAT,
                field: "gid",
                text: gid_text.to_owned(),
            })?;
        // Ranges were checked against 16 and 24 bits above.
        Ok(PingpongDest {
            lid: lid as u16,
            qpn: qpn as u32,
            psn: Psn::new(psn as u32),
            gid,
        })
    }
}

/// Checks the client's final message.
pub fn decode_done(msg: &[u8]) -> Result<(), DecodeError> {
    if msg == DONE {
        Ok(())
    } else {
        Err(DecodeError::Field {
            what: "rc_pingpong done",
            field: "text",
            text: printable(&String::from_utf8_lossy(msg)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guest b's message from the capture in the peers' README.
    const FROM_B: &[u8; 52] = b"0000:000011:42f128:00000000000000000000ffffc612000c\0";

    fn b() -> PingpongDest {
        PingpongDest {
            lid: 0,
            qpn: 0x11,
            psn: Psn::new(0x42f128),
            gid: "::ffff:198.18.0.12".parse().unwrap(),
        }
    }

    #[test]
    fn encodes_like_rc_pingpong() {
        assert_eq!(&b().encode(), FROM_B);
    }

    #[test]
    fn decodes_rc_pingpong_message() {
        assert_eq!(PingpongDest::decode(FROM_B), Ok(b()));
    }

    #[test]
    fn rejects_wrong_length_missing_nul_and_bad_fields() {
        assert!(matches!(
            PingpongDest::decode(&FROM_B[..51]),
            Err(DecodeError::Length {
                expected: 52,
                got: 51,
                ..
            })
        ));
        let mut no_nul = *FROM_B;
        no_nul[51] = b'0';
        assert!(matches!(
            PingpongDest::decode(&no_nul),
            Err(DecodeError::Terminator { .. })
        ));
        let mut bad_qpn = *FROM_B;
        bad_qpn[5] = b'x';
        assert!(matches!(
            PingpongDest::decode(&bad_qpn),
            Err(DecodeError::Field { field: "qpn", .. })
        ));
    }

    #[test]
    fn done_is_five_bytes_with_nul() {
        assert_eq!(decode_done(b"done\0"), Ok(()));
        assert!(decode_done(b"done").is_err());
    }
}
