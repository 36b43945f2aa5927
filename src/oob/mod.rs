//! Out-of-band connection setup: the messages RDMA test tools exchange over TCP before their QPs
//! can talk (QPN, PSN, GID, and for RDMA also rkey and address). Pure encoders and decoders, one
//! file per tool, checked byte for byte against captures of the real tools; plus [`tcp`], a small
//! blocking driver that runs the exchanges with a timeout on every wait. Not here: the QPs.
//!
//! - [`pingpong`]: rdma-core's `ibv_rc_pingpong` (52-byte text message, TCP 18515).
//! - [`perftest`]: perftest's `ib_write_bw` & co. (version, system data, MTU, 59/108-byte keys,
//!   reports, TCP 18515).
//! - [`verbs_peer`]: the pyverbs peer `rc_verbs_peer.py` (one JSON line each way, TCP 18516).
//! - [`perf`]: `roce perf`'s own JSON lines (both sides roce), with the bounds every value read
//!   from the peer must meet.
//!
//! Everything here decodes what an untrusted peer sent: no decoder panics, allocates more than
//! the message it is given, or quotes more than a short, printable excerpt of it in an error.

use std::net::Ipv6Addr;

pub mod perf;
pub mod perftest;
pub mod pingpong;
pub mod tcp;
pub mod verbs_peer;

/// TCP port of ibv_rc_pingpong and perftest.
pub const PINGPONG_PORT: u16 = 18515;
/// TCP port of rc_verbs_peer.py.
pub const VERBS_PEER_PORT: u16 = 18516;

/// Why a received message could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The message has the wrong size.
    #[error("{what}: expected {expected} bytes, got {got}")]
    Length {
        /// The message.
        what: &'static str,
        /// Bytes the format has.
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// A field is missing, not hex, or too large for its width.
    #[error("{what}: bad {field} {text:?}")]
    Field {
        /// The message.
        what: &'static str,
        /// The field.
        field: &'static str,
        /// The text found (lossy).
        text: String,
    },
    /// The text is not terminated as the format requires (NUL or newline).
    #[error("{what}: missing terminator")]
    Terminator {
        /// The message.
        what: &'static str,
    },
    /// A line did not end within the bytes the format allows.
    #[error("{what}: no end of line within {max} bytes")]
    TooLong {
        /// The message.
        what: &'static str,
        /// The longest line accepted, newline included.
        max: usize,
    },
    /// A JSON line could not be read.
    #[error("{what}: {reason}")]
    Json {
        /// The message.
        what: &'static str,
        /// What serde_json said.
        reason: String,
    },
    /// The peer refused our last message and said why (`{"error": ...}`).
    #[error("{what}: the peer refused: {reason}")]
    Refused {
        /// The message expected instead.
        what: &'static str,
        /// The peer's reason (printable, shortened).
        reason: String,
    },
}

/// The longest excerpt of a peer's text an error quotes.
const MAX_QUOTE: usize = 160;

/// A peer's text as an error may quote it: control characters escaped (no terminal escape
/// sequences reach the user's screen), at most 160 characters (`MAX_QUOTE`), `...` when cut.
pub fn printable(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_QUOTE {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The GID as ibv_rc_pingpong sends it: 32 lowercase hex digits, bytes in wire order.
pub fn gid_to_hex(gid: Ipv6Addr) -> String {
    gid.octets().iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses 32 hex digits (wire order) into a GID.
pub fn gid_from_hex(text: &str) -> Option<Ipv6Addr> {
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    let mut octets = [0u8; 16];
    for (i, byte) in octets.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(Ipv6Addr::from(octets))
}

/// The GID as pyverbs prints it: eight groups of four hex digits, never compressed
/// (`0000:0000:0000:0000:0000:ffff:c612:000c`).
pub fn gid_to_groups(gid: Ipv6Addr) -> String {
    let s = gid.segments();
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}:{:04x}:{:04x}:{:04x}:{:04x}",
        s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
    )
}

/// A field of `width` hex digits at most, as a number no larger than `max`.
pub(crate) fn hex_field(
    what: &'static str,
    field: &'static str,
    text: Option<&str>,
    max: u64,
) -> Result<u64, DecodeError> {
    let bad = |t: &str| DecodeError::Field {
        what,
        field,
        text: t.to_owned(),
    };
    let text = text.ok_or_else(|| bad(""))?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad(text));
    }
    match u64::from_str_radix(text, 16) {
        Ok(v) if v <= max => Ok(v),
        _ => Err(bad(text)),
    }
}

/// The text of a NUL-terminated message of exactly `len` bytes (the NUL is the last byte).
pub(crate) fn c_string<'a>(
    what: &'static str,
    msg: &'a [u8],
    len: usize,
) -> Result<&'a str, DecodeError> {
    if msg.len() != len {
        return Err(DecodeError::Length {
            what,
            expected: len,
            got: msg.len(),
        });
    }
    let (last, body) = msg.split_last().ok_or(DecodeError::Terminator { what })?;
    if *last != 0 || body.contains(&0) {
        return Err(DecodeError::Terminator { what });
    }
    std::str::from_utf8(body).map_err(|_| DecodeError::Field {
        what,
        field: "text",
        text: String::from_utf8_lossy(body).into_owned(),
    })
}

/// `text` plus a NUL, as a C `sprintf` + `write(sizeof msg)` sends it.
pub(crate) fn with_nul(text: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(text.len() + 1);
    v.extend_from_slice(text.as_bytes());
    v.push(0);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_hex_is_wire_order() {
        let gid: Ipv6Addr = "::ffff:198.18.0.12".parse().unwrap();
        assert_eq!(gid_to_hex(gid), "00000000000000000000ffffc612000c");
        assert_eq!(gid_from_hex("00000000000000000000ffffc612000c"), Some(gid));
        assert_eq!(gid_from_hex("00000000000000000000ffffc612000"), None);
        assert_eq!(gid_from_hex("00000000000000000000ffffc612000g"), None);
    }

    #[test]
    fn gid_groups_are_uncompressed() {
        let gid: Ipv6Addr = "::ffff:198.18.0.12".parse().unwrap();
        assert_eq!(
            gid_to_groups(gid),
            "0000:0000:0000:0000:0000:ffff:c612:000c"
        );
    }

    #[test]
    fn printable_escapes_controls_and_cuts_long_text() {
        assert_eq!(printable("a\u{1b}[31mb\n"), "a\\u{1b}[31mb\\n");
        let long = "x".repeat(1000);
        assert_eq!(printable(&long), format!("{}...", "x".repeat(MAX_QUOTE)));
    }

    #[test]
    fn hex_field_rejects_signs_and_overflow() {
        assert_eq!(hex_field("m", "f", Some("00ff"), 0xffff), Ok(255));
        assert!(hex_field("m", "f", Some("+1"), 0xffff).is_err());
        assert!(hex_field("m", "f", Some("10000"), 0xffff).is_err());
        assert!(hex_field("m", "f", None, 0xffff).is_err());
    }
}
