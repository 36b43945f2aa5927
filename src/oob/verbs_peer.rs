//! The pyverbs peer's exchange (rc_verbs_peer.py, TCP 18516): one JSON line each way, client
//! first, written by Python's `json.dumps` (`", "` and `": "` separators, fields in the order
//! below); at the end the client sends `"done\n"`. Encoding and decoding only.

use std::net::Ipv6Addr;

use serde::Deserialize;

use super::{gid_to_groups, printable, DecodeError};
use roce_proto::psn::{Psn, PSN_MASK};

/// What the client sends when it is finished.
pub const DONE: &[u8; 5] = b"done\n";

const WHAT: &str = "rc_verbs_peer line";

/// One side's connection data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerbsPeerInfo {
    /// QP number.
    pub qpn: u32,
    /// First PSN.
    pub psn: Psn,
    /// GID.
    pub gid: Ipv6Addr,
    /// Start of the sender's RDMA WRITE/READ target.
    pub addr: u64,
    /// rkey of the sender's MR.
    pub rkey: u32,
    /// Address of the 64-bit atomic target (`addr + 16 KiB` on the pyverbs server).
    pub atomic_addr: u64,
}

#[derive(Deserialize)]
struct Line {
    qpn: u32,
    psn: u32,
    gid: String,
    addr: u64,
    rkey: u32,
    atomic_addr: u64,
}

impl VerbsPeerInfo {
    /// The line exactly as `json.dumps(info) + "\n"` writes it.
    pub fn encode(&self) -> Vec<u8> {
        format!(
            "{{\"qpn\": {}, \"psn\": {}, \"gid\": \"{}\", \"addr\": {}, \"rkey\": {}, \"atomic_addr\": {}}}\n",
            self.qpn,
            self.psn.value(),
            gid_to_groups(self.gid),
            self.addr,
            self.rkey,
            self.atomic_addr
        )
        .into_bytes()
    }

    /// Parses one line (any JSON spacing and field order; the newline is optional).
    pub fn decode(line: &[u8]) -> Result<Self, DecodeError> {
        let parsed: Line = serde_json::from_slice(line).map_err(|e| DecodeError::Json {
            what: WHAT,
            reason: printable(&e.to_string()),
        })?;
        let field = |field: &'static str, text: String| DecodeError::Field {
            what: WHAT,
            field,
            text,
        };
        let gid: Ipv6Addr = parsed
            .gid
            .parse()
            .map_err(|_| field("gid", printable(&parsed.gid)))?;
        if parsed.psn > PSN_MASK {
            return Err(field("psn", parsed.psn.to_string()));
        }
        if parsed.qpn > PSN_MASK {
            return Err(field("qpn", parsed.qpn.to_string()));
        }
        Ok(VerbsPeerInfo {
            qpn: parsed.qpn,
            psn: Psn::new(parsed.psn),
            gid,
            addr: parsed.addr,
            rkey: parsed.rkey,
            atomic_addr: parsed.atomic_addr,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guest b's line in verbs_imm_atomic.pcap.
    const FROM_B: &[u8] = b"{\"qpn\": 25, \"psn\": 9837772, \"gid\": \"0000:0000:0000:0000:0000:ffff:c612:000c\", \"addr\": 140361510559744, \"rkey\": 2566, \"atomic_addr\": 140361510576128}\n";

    #[test]
    fn round_trips_python_json_byte_for_byte() {
        let info = VerbsPeerInfo::decode(FROM_B).unwrap();
        assert_eq!(
            info,
            VerbsPeerInfo {
                qpn: 25,
                psn: Psn::new(9837772),
                gid: "::ffff:198.18.0.12".parse().unwrap(),
                addr: 140361510559744,
                rkey: 2566,
                atomic_addr: 140361510576128,
            }
        );
        assert_eq!(info.encode(), FROM_B);
    }

    #[test]
    fn rejects_out_of_range_psn_and_bad_gid() {
        let big =
            br#"{"qpn": 1, "psn": 16777216, "gid": "::1", "addr": 0, "rkey": 0, "atomic_addr": 0}"#;
        assert!(matches!(
            VerbsPeerInfo::decode(big),
            Err(DecodeError::Field { field: "psn", .. })
        ));
        let gid = br#"{"qpn": 1, "psn": 1, "gid": "nope", "addr": 0, "rkey": 0, "atomic_addr": 0}"#;
        assert!(matches!(
            VerbsPeerInfo::decode(gid),
            Err(DecodeError::Field { field: "gid", .. })
        ));
        assert!(matches!(
            VerbsPeerInfo::decode(b"{"),
            Err(DecodeError::Json { .. })
        ));
    }
}
