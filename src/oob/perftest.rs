//! perftest's exchange (linux-rdma/perftest src/perftest_communication.c, as in perftest 4.5-0.17,
//! Debian 12, which reports version "6.06"). Every step is symmetric: the client writes first and
//! then reads, the server reads and then writes the same number of bytes (`ctx_xchg_data`,
//! `ctx_hand_shake`). Encoding and decoding only; [`super::tcp::PerftestConn`] runs the steps.
//!
//! A bandwidth test (`ib_write_bw`, `ib_read_bw`, `ib_send_bw` without `--duplex`, one QP,
//! without rdma_cm), as captured:
//! 1. version: 16 bytes, the NUL-padded version string ([`VERSION_LEN`]);
//! 2. system data: cycle buffer then cache line size, 4-byte big-endian ints (peer version >= 5.32);
//! 3. MTU: 2 bytes, `sprintf("%d", enum ibv_mtu)` + NUL (`"3\0"` = 1024; both use the smaller);
//! 4. keys ([`PerftestDest`], 108 bytes with a GID, 59 without) three times: the real exchange,
//!    again after `ctx_connect` (RTR/RTS), and once more as a barrier before traffic;
//! 5. traffic; then keys once more (the end barrier);
//! 6. the report ([`BwReport`]): size, iters, bw_peak, bw_avg, msgRate_avg, 8 bytes each,
//!    big-endian (the server's report is whatever was in its memory: never trust it);
//! 7. close: keys, then each side writes `"done\0"` and closes without reading.

use std::net::Ipv6Addr;

use super::{c_string, hex_field, with_nul, DecodeError};
use roce_proto::psn::{Psn, PSN_MASK};

/// Key message without a GID: `"%04x:%04x:%06x:%06x:%08x:%016llx:%08x"` + NUL.
pub const KEY_MSG_SIZE: usize = 59;
/// Key message with a GID: `"%04x:%04x:%06x:%06x:%08x:%016llx:" + 16 x "%02x:" + "%08x:"` + NUL.
pub const KEY_MSG_SIZE_GID: usize = 108;
/// The version message (`char version[MAX_VERSION]`).
pub const VERSION_LEN: usize = 16;
/// The version perftest 4.5-0.17 (Debian 12) sends.
pub const DEBIAN12_VERSION: &str = "6.06";
/// The MTU message (peer version >= 5.31).
pub const MTU_MSG_LEN: usize = 2;
/// What each side writes last.
pub const DONE: &[u8; 5] = b"done\0";

const KEYS: &str = "perftest keys";

/// One side's connection data (perftest's `struct pingpong_dest`, the fields it sends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerftestDest {
    /// LID (0 on RoCE).
    pub lid: u16,
    /// Outstanding RDMA reads the sender accepts (its max_qp_rd_atom; rxe sends 0x80 for
    /// ib_read_bw and 1 for ib_write_bw).
    pub out_reads: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// First PSN.
    pub psn: Psn,
    /// rkey of the sender's buffer.
    pub rkey: u32,
    /// Virtual address of the sender's buffer.
    pub vaddr: u64,
    /// GID (present when the test runs with `-x`/a GID index, always on RoCE).
    pub gid: Option<Ipv6Addr>,
    /// SRQ number (XRC/DC only; 0 otherwise).
    pub srqn: u32,
}

impl PerftestDest {
    /// The bytes perftest writes: [`KEY_MSG_SIZE_GID`] with a GID, else [`KEY_MSG_SIZE`].
    pub fn encode(&self) -> Vec<u8> {
        let head = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid,
            self.out_reads,
            self.qpn & PSN_MASK,
            self.psn.value(),
            self.rkey,
            self.vaddr
        );
        let text = match self.gid {
            Some(gid) => {
                let bytes: String = gid.octets().iter().map(|b| format!("{b:02x}:")).collect();
                format!("{head}{bytes}{:08x}:", self.srqn)
            }
            None => format!("{head}{:08x}", self.srqn),
        };
        with_nul(&text)
    }

    /// The message size for a test with (`true`) or without a GID.
    pub const fn message_len(with_gid: bool) -> usize {
        if with_gid {
            KEY_MSG_SIZE_GID
        } else {
            KEY_MSG_SIZE
        }
    }

    /// Parses a key message; `with_gid` says which of the two formats the test uses (both sides
    /// must agree: perftest reads exactly the size it would write).
    pub fn decode(msg: &[u8], with_gid: bool) -> Result<Self, DecodeError> {
        let text = c_string(KEYS, msg, Self::message_len(with_gid))?;
        let mut parts = text.split(':');
        let lid = hex_field(KEYS, "lid", parts.next(), 0xffff)?;
        let out_reads = hex_field(KEYS, "out_reads", parts.next(), 0xffff)?;
        let qpn = hex_field(KEYS, "qpn", parts.next(), u64::from(PSN_MASK))?;
        let psn = hex_field(KEYS, "psn", parts.next(), u64::from(PSN_MASK))?;
        let rkey = hex_field(KEYS, "rkey", parts.next(), u64::from(u32::MAX))?;
        let vaddr = hex_field(KEYS, "vaddr", parts.next(), u64::MAX)?;
        let gid = if with_gid {
            let mut octets = [0u8; 16];
            for byte in octets.iter_mut() {
                *byte = hex_field(KEYS, "gid", parts.next(), 0xff)? as u8;
            }
            Some(Ipv6Addr::from(octets))
        } else {
            None
        };
        let srqn = hex_field(KEYS, "srqn", parts.next(), u64::from(u32::MAX))?;
        // The GID format ends in ':' (one empty part); the plain one does not.
        let rest: Vec<&str> = parts.collect();
        let tail_ok = if with_gid {
            rest == [""]
        } else {
            rest.is_empty()
        };
        if !tail_ok {
            return Err(DecodeError::Field {
                what: KEYS,
                field: "end",
                text: rest.join(":"),
            });
        }
        // Ranges were checked above.
        Ok(PerftestDest {
            lid: lid as u16,
            out_reads: out_reads as u16,
            qpn: qpn as u32,
            psn: Psn::new(psn as u32),
            rkey: rkey as u32,
            vaddr,
            gid,
            srqn: srqn as u32,
        })
    }
}

/// The 16-byte version message: the string, NUL-padded.
pub fn encode_version(version: &str) -> [u8; VERSION_LEN] {
    let mut msg = [0u8; VERSION_LEN];
    for (dst, src) in msg.iter_mut().zip(version.bytes().take(VERSION_LEN - 1)) {
        *dst = src;
    }
    msg
}

/// The version string from the 16-byte message (up to the first NUL).
pub fn decode_version(msg: &[u8]) -> Result<String, DecodeError> {
    const WHAT: &str = "perftest version";
    if msg.len() != VERSION_LEN {
        return Err(DecodeError::Length {
            what: WHAT,
            expected: VERSION_LEN,
            got: msg.len(),
        });
    }
    let end = msg
        .iter()
        .position(|&b| b == 0)
        .ok_or(DecodeError::Terminator { what: WHAT })?;
    let text = msg.get(..end).unwrap_or_default();
    let ok = !text.is_empty() && text.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    if !ok {
        return Err(DecodeError::Field {
            what: WHAT,
            field: "version",
            text: String::from_utf8_lossy(text).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(text).into_owned())
}

/// A version string as the number perftest compares (`atof`): "6.06" -> 6.06.
pub fn version_number(version: &str) -> f64 {
    version.parse().unwrap_or(0.0)
}

/// Path MTU as perftest sends it: the `enum ibv_mtu` value as decimal text plus NUL.
pub fn encode_mtu(path_mtu: u16) -> Option<[u8; MTU_MSG_LEN]> {
    let code = match path_mtu {
        256 => b'1',
        512 => b'2',
        1024 => b'3',
        2048 => b'4',
        4096 => b'5',
        _ => return None,
    };
    Some([code, 0])
}

/// The path MTU in bytes from the 2-byte MTU message.
pub fn decode_mtu(msg: &[u8]) -> Result<u16, DecodeError> {
    let text = c_string("perftest mtu", msg, MTU_MSG_LEN)?;
    match text {
        "1" => Ok(256),
        "2" => Ok(512),
        "3" => Ok(1024),
        "4" => Ok(2048),
        "5" => Ok(4096),
        other => Err(DecodeError::Field {
            what: "perftest mtu",
            field: "ibv_mtu",
            text: other.to_owned(),
        }),
    }
}

/// The two system-data ints (cycle buffer, cache line size), each sent as 4 big-endian bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysData {
    /// Buffer alignment perftest uses (the page size, 4096).
    pub cycle_buffer: i32,
    /// Cache line size (64).
    pub cache_line_size: i32,
}

impl Default for SysData {
    fn default() -> Self {
        SysData {
            cycle_buffer: 4096,
            cache_line_size: 64,
        }
    }
}

/// Decodes one 4-byte big-endian int of the system data.
pub fn decode_i32(what: &'static str, msg: &[u8]) -> Result<i32, DecodeError> {
    let bytes: [u8; 4] = msg.try_into().map_err(|_| DecodeError::Length {
        what,
        expected: 4,
        got: msg.len(),
    })?;
    Ok(i32::from_be_bytes(bytes))
}

/// The bandwidth report exchanged after a bw test (`xchg_bw_reports`, peer version >= 5.33,
/// without `--report-per-port`): five 8-byte big-endian values, each its own exchange.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BwReport {
    /// Message size in bytes.
    pub size: u64,
    /// Iterations.
    pub iters: u64,
    /// Peak bandwidth (MB/s or Gb/s, as the test reports).
    pub bw_peak: f64,
    /// Average bandwidth.
    pub bw_avg: f64,
    /// Average message rate (Mpps).
    pub msg_rate_avg: f64,
}

impl BwReport {
    /// The five 8-byte messages, in order.
    pub fn encode(&self) -> [[u8; 8]; 5] {
        [
            self.size.to_be_bytes(),
            self.iters.to_be_bytes(),
            self.bw_peak.to_bits().to_be_bytes(),
            self.bw_avg.to_bits().to_be_bytes(),
            self.msg_rate_avg.to_bits().to_be_bytes(),
        ]
    }

    /// The report from the five 8-byte messages.
    pub fn decode(parts: &[[u8; 8]; 5]) -> Self {
        let [size, iters, peak, avg, rate] = *parts;
        BwReport {
            size: u64::from_be_bytes(size),
            iters: u64::from_be_bytes(iters),
            bw_peak: f64::from_bits(u64::from_be_bytes(peak)),
            bw_avg: f64::from_bits(u64::from_be_bytes(avg)),
            msg_rate_avg: f64::from_bits(u64::from_be_bytes(rate)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_mtu_and_sysdata() {
        let v = encode_version(DEBIAN12_VERSION);
        assert_eq!(&v, b"6.06\0\0\0\0\0\0\0\0\0\0\0\0");
        assert_eq!(decode_version(&v).as_deref(), Ok("6.06"));
        assert!((version_number("6.06") - 6.06).abs() < 1e-9);
        assert_eq!(encode_mtu(1024), Some(*b"3\0"));
        assert_eq!(decode_mtu(b"3\0"), Ok(1024));
        assert!(decode_mtu(b"9\0").is_err());
        assert_eq!(decode_i32("cycle buffer", &[0, 0, 0x10, 0]), Ok(4096));
    }

    #[test]
    fn report_is_big_endian() {
        let r = BwReport {
            size: 64,
            iters: 5,
            bw_peak: 1.5,
            bw_avg: 1.0,
            msg_rate_avg: 0.25,
        };
        let parts = r.encode();
        assert_eq!(parts[0], [0, 0, 0, 0, 0, 0, 0, 0x40]);
        assert_eq!(parts[2], [0x3f, 0xf8, 0, 0, 0, 0, 0, 0]);
        assert_eq!(BwReport::decode(&parts), r);
    }
}
