//! The steps of the hostile peer harness (`hostile_peer.rs`), decoded from bytes.

use roce_proto::verbs::AccessFlags;

use crate::action_bytes;

/// Bytes one action is decoded from.
pub const ACTION_BYTES: usize = 8;

/// One step: the peer sends a frame, or the endpoint's owner does something.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// Register a region (`target`: may receive local writes: receives, READ/atomic results).
    Register {
        /// Bytes.
        len: usize,
        /// Rights granted.
        access: AccessFlags,
        /// Whether it may be a local write target.
        target: bool,
    },
    /// Deregister the `which`-th live region.
    Deregister {
        /// Which live region (modulo their number).
        which: u8,
    },
    /// Post a local invalidate of the `which`-th live region (by rkey or lkey).
    LocalInv {
        /// Which live region (modulo their number).
        which: u8,
        /// Invalidate its rkey, else its lkey.
        by_rkey: bool,
    },
    /// Post a receive into a target region.
    PostRecv {
        /// Which target region (modulo their number).
        which: u8,
        /// Bytes.
        len: u8,
    },
    /// Post a send work request (kind 0 SEND, 1 SEND with Invalidate, 2 WRITE, 3 READ, 4 FETCH_ADD).
    PostSend {
        /// The kind of work request.
        kind: u8,
        /// Which region (modulo their number).
        which: u8,
        /// Bytes.
        len: u8,
    },
    /// The peer sends a request: `op` picks the opcode, the rest its fields.
    PeerRequest {
        /// Picks the opcode.
        op: u8,
        /// Picks the rkey (a live region's or another).
        key: u8,
        /// Picks the offset into the region.
        off: u8,
        /// Picks the length.
        len: u8,
        /// Picks the PSN: the expected one, behind it or ahead of it.
        psn: u8,
        /// Bits that vary the request (an address beyond the region, the opcode's variant, a DMA
        /// length other than the payload's).
        flags: u8,
    },
    /// The peer sends a response (ACK/NAK, READ response, atomic ACK) to our requests.
    PeerResponse {
        /// Picks the opcode.
        op: u8,
        /// How far behind our next PSN (1 to 6).
        psn_back: u8,
        /// The AETH syndrome.
        syndrome: u8,
        /// Picks the MSN and the payload length.
        len: u8,
    },
    /// A CNP, from the peer or a stranger.
    PeerCnp {
        /// From an address that is not the peer's.
        stranger: bool,
    },
    /// Drain `poll_transmit` and check every frame.
    Poll,
    /// Poll the completion queue.
    PollCq,
    /// Let time pass and fire due timers.
    Advance {
        /// Nanoseconds.
        nanos: u64,
    },
    /// Take the QP through RESET back to RTS (after an error, most likely).
    Reconnect,
}

impl Action {
    /// The action `b` encodes (every byte string is some action).
    pub fn decode(b: &[u8; ACTION_BYTES]) -> Action {
        // Three regions in four grant every remote right, the rest what the bits say.
        let access = |x: u8| {
            let bits = AccessFlags::from_bits_truncate(u32::from(x & 0xf));
            if x & 0x30 == 0 {
                bits
            } else {
                bits | AccessFlags::REMOTE_WRITE
                    | AccessFlags::REMOTE_READ
                    | AccessFlags::REMOTE_ATOMIC
            }
        };
        match b[0] % 16 {
            0 | 1 if b[3] % 4 == 0 => Action::Deregister { which: b[1] },
            0 | 1 => Action::Register {
                len: 64 << (b[1] % 4),
                access: access(b[2]),
                target: b[3] & 1 == 1,
            },
            2 if b[3] % 2 == 0 => Action::LocalInv {
                which: b[1],
                by_rkey: b[2] & 1 == 1,
            },
            2 | 3 => Action::PostRecv {
                which: b[1],
                len: b[2],
            },
            4 => Action::PostSend {
                kind: b[1] % 5,
                which: b[2],
                len: b[3],
            },
            5..=9 => Action::PeerRequest {
                op: b[1],
                key: b[2],
                off: b[3],
                len: b[4],
                psn: b[5],
                flags: b[6],
            },
            10 => Action::PeerResponse {
                op: b[1],
                psn_back: b[2],
                syndrome: b[3],
                len: b[4],
            },
            11 => match b[1] % 3 {
                0 => Action::PeerCnp {
                    stranger: b[2] & 1 == 1,
                },
                _ => Action::PollCq,
            },
            12 | 13 => Action::Poll,
            14 => Action::Advance {
                nanos: (u64::from(b[1]) + 1) << (b[2] % 28),
            },
            _ => Action::Reconnect,
        }
    }

    /// The actions a byte string encodes, `ACTION_BYTES` each (a short tail is dropped).
    pub fn decode_all(data: &[u8]) -> Vec<Action> {
        action_bytes::decode_chunks(data, Action::decode)
    }
}
