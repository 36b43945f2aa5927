//! The placement header of roce's selective-repeat mode (24 bytes, off by default): the first
//! bytes of the payload of every SEND and RDMA WRITE request packet on a queue pair whose two
//! ends chose [`Recovery::SelectiveRepeat`](crate::verbs::Recovery). It carries what a
//! responder needs to place a packet that arrives out of order, before the packets that would
//! tell it where the message goes (IRN, SIGCOMM'18, §5.1: "RETH in every WRITE packet", and
//! the receive WQE sequence number with every SEND packet):
//!
//! - the first PSN of the packet's message: the packet's offset in the message is
//!   `(PSN - message PSN) x path MTU`;
//! - the receive sequence number: which receive work request (counted from the first, one per
//!   SEND or RDMA WRITE with immediate) the message consumes;
//! - for an RDMA WRITE, the message's RETH (its start address, R_Key and length); zero for a
//!   SEND, whose length field still carries the message length.
//!
//! Standard headers stay as IBA defines them (a WRITE First still carries its RETH), so a
//! capture decodes as RoCEv2 with these bytes at the start of the payload. The wire format is
//! written out in `docs/selective-repeat.md`.

use super::{read_u32, read_u64, write_u32, write_u64};
use crate::psn::Psn;

fixed_header! {
    /// A parsed placement header.
    pub struct Repr[24, "Length of the placement header."] {
        /// First PSN of the message (24 bits; the top byte is reserved, sent as 0).
        pub msg_psn: u32 { at: 0, read: read_u32, write: write_u32, set: set_msg_psn },
        /// Receive sequence number: receives the earlier messages consume (this one's, if any).
        pub recv_sn: u32 { at: 4, read: read_u32, write: write_u32, set: set_recv_sn },
        /// RDMA WRITE: the message's remote start address (0 for a SEND).
        pub va: u64 { at: 8, read: read_u64, write: write_u64, set: set_va },
        /// RDMA WRITE: the message's R_Key (0 for a SEND).
        pub rkey: u32 { at: 16, read: read_u32, write: write_u32, set: set_rkey },
        /// The message's length in bytes.
        pub dma_len: u32 { at: 20, read: read_u32, write: write_u32, set: set_dma_len },
    }
}

impl Repr {
    /// The message's first PSN.
    pub fn message_psn(&self) -> Psn {
        Psn::new(self.msg_psn)
    }

    /// The 24 header bytes (what `emit` writes).
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(&self.msg_psn.to_be_bytes());
        b[4..8].copy_from_slice(&self.recv_sn.to_be_bytes());
        b[8..16].copy_from_slice(&self.va.to_be_bytes());
        b[16..20].copy_from_slice(&self.rkey.to_be_bytes());
        b[20..].copy_from_slice(&self.dma_len.to_be_bytes());
        b
    }

    /// Splits a request payload into its placement header and the data after it.
    pub fn split(payload: &[u8]) -> Result<(Repr, &[u8]), super::WireError> {
        let header = Packet::new_checked(payload)?;
        let repr = Repr::parse(&header)?;
        Ok((repr, &payload[HEADER_LEN..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static HEADER: [u8; 24] = [
        0x00, 0x12, 0x34, 0x56, // message PSN
        0x00, 0x00, 0x00, 0x07, // receive sequence number
        0x00, 0x00, 0x55, 0x55, 0x12, 0x34, 0x50, 0x00, // VA
        0x00, 0x00, 0x12, 0x03, // rkey
        0x00, 0x00, 0x20, 0x00, // 8192 bytes
    ];

    const REPR: Repr = Repr {
        msg_psn: 0x12_3456,
        recv_sn: 7,
        va: 0x5555_1234_5000,
        rkey: 0x1203,
        dma_len: 8192,
    };

    fixed_header_tests!(HEADER, REPR);

    #[test]
    fn to_bytes_is_what_emit_writes_and_split_reads_back() {
        assert_eq!(REPR.to_bytes(), HEADER);
        let mut payload = HEADER.to_vec();
        payload.extend_from_slice(b"data");
        let (repr, data) = Repr::split(&payload).unwrap();
        assert_eq!((repr, data), (REPR, &b"data"[..]));
        assert_eq!(repr.message_psn(), Psn::new(0x12_3456));
        assert!(Repr::split(&HEADER[..23]).is_err());
    }
}
