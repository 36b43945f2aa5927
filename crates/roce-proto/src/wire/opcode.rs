//! The BTH opcode table: one static entry per RC, UC and UD opcode plus the RoCEv2 CNP, saying
//! which extension headers follow the BTH, where the packet sits in a message and whether it may
//! carry payload (after Linux rxe's `rxe_opcode.c`). It drives parsing, building and validation.

use core::fmt;

use super::{aeth, atomic_ack_eth, atomic_eth, cnp, deth, ieth, immdt, reth};

/// Length of the RDETH (RD is not implemented, so it has no module of its own).
const RDETH_LEN: usize = 4;

/// A BTH opcode byte. Values outside the table are kept; [`Opcode::info`] returns `None` for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Opcode(pub u8);

/// The transport service an opcode belongs to (its top three bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Reliable connected (0x00-0x1f).
    Rc,
    /// Unreliable connected (0x20-0x3f).
    Uc,
    /// Unreliable datagram (0x60-0x7f).
    Ud,
    /// RoCEv2 congestion notification packet (0x81).
    Cnp,
}

/// Where a packet sits in a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Neither first nor last.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// The whole message in one packet.
    Only,
}

/// The operation an opcode is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// SEND (with or without immediate / invalidate).
    Send,
    /// RDMA WRITE (with or without immediate).
    Write,
    /// RDMA READ request.
    ReadRequest,
    /// RDMA READ response.
    ReadResponse,
    /// Acknowledge (ACK or NAK, by the AETH syndrome).
    Ack,
    /// Atomic acknowledge.
    AtomicAck,
    /// Atomic compare and swap.
    CompareSwap,
    /// Atomic fetch and add.
    FetchAdd,
    /// Congestion notification.
    Cnp,
}

/// A set of extension headers (bit flags). Their wire order is fixed: DETH, RETH, AtomicETH,
/// ImmDt, IETH for requests; AETH, AtomicAckETH for responses; the CNP's 16 reserved bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ExtHeaders(pub u16);

impl ExtHeaders {
    /// No extension header.
    pub const NONE: ExtHeaders = ExtHeaders(0);
    /// RDMA extended transport header (16 B).
    pub const RETH: ExtHeaders = ExtHeaders(1 << 0);
    /// ACK extended transport header (4 B).
    pub const AETH: ExtHeaders = ExtHeaders(1 << 1);
    /// Immediate data (4 B).
    pub const IMMDT: ExtHeaders = ExtHeaders(1 << 2);
    /// Invalidate extended transport header (4 B).
    pub const IETH: ExtHeaders = ExtHeaders(1 << 3);
    /// Atomic extended transport header (28 B).
    pub const ATOMIC_ETH: ExtHeaders = ExtHeaders(1 << 4);
    /// Atomic ACK extended transport header (8 B).
    pub const ATOMIC_ACK_ETH: ExtHeaders = ExtHeaders(1 << 5);
    /// Datagram extended transport header (8 B).
    pub const DETH: ExtHeaders = ExtHeaders(1 << 6);
    /// Reliable datagram extended transport header (4 B; RD is not implemented).
    pub const RDETH: ExtHeaders = ExtHeaders(1 << 7);
    /// The 16 reserved bytes after a CNP's BTH.
    pub const CNP_RESERVED: ExtHeaders = ExtHeaders(1 << 8);

    /// All of `other` is in `self`.
    pub const fn contains(self, other: ExtHeaders) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union.
    pub const fn union(self, other: ExtHeaders) -> ExtHeaders {
        ExtHeaders(self.0 | other.0)
    }

    /// Every header with its size, in wire order: RDETH, DETH, RETH, AtomicETH, ImmDt, IETH for
    /// requests; AETH, AtomicAckETH for responses; the CNP's reserved bytes.
    const WIRE_ORDER: [(ExtHeaders, usize); 9] = [
        (Self::RDETH, RDETH_LEN),
        (Self::DETH, deth::HEADER_LEN),
        (Self::RETH, reth::HEADER_LEN),
        (Self::ATOMIC_ETH, atomic_eth::HEADER_LEN),
        (Self::IMMDT, immdt::HEADER_LEN),
        (Self::IETH, ieth::HEADER_LEN),
        (Self::AETH, aeth::HEADER_LEN),
        (Self::ATOMIC_ACK_ETH, atomic_ack_eth::HEADER_LEN),
        (Self::CNP_RESERVED, cnp::HEADER_LEN),
    ];

    /// Total bytes of these headers.
    pub const fn len(self) -> usize {
        let mut total = 0;
        let mut i = 0;
        while i < Self::WIRE_ORDER.len() {
            let (header, size) = Self::WIRE_ORDER[i];
            if self.contains(header) {
                total += size;
            }
            i += 1;
        }
        total
    }

    /// Where each of these headers starts within them, indexed by the header's flag bit
    /// (0 for absent ones).
    const fn offsets(self) -> [u8; 16] {
        let mut offsets = [0u8; 16];
        let mut at = 0;
        let mut i = 0;
        while i < Self::WIRE_ORDER.len() {
            let (header, size) = Self::WIRE_ORDER[i];
            if self.contains(header) {
                offsets[header.0.trailing_zeros() as usize] = at as u8;
                at += size;
            }
            i += 1;
        }
        offsets
    }

    /// No header.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl core::ops::BitOr for ExtHeaders {
    type Output = ExtHeaders;
    fn bitor(self, rhs: ExtHeaders) -> ExtHeaders {
        self.union(rhs)
    }
}

#[rustfmt::skip]
impl Opcode {
    /// RC send first (0x00).
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    /// RC send middle (0x01).
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    /// RC send last (0x02).
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    /// RC send last with immediate (0x03).
    pub const RC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x03);
    /// RC send only (0x04).
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    /// RC send only with immediate (0x05).
    pub const RC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x05);
    /// RC rdma write first (0x06).
    pub const RC_RDMA_WRITE_FIRST: Opcode = Opcode(0x06);
    /// RC rdma write middle (0x07).
    pub const RC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x07);
    /// RC rdma write last (0x08).
    pub const RC_RDMA_WRITE_LAST: Opcode = Opcode(0x08);
    /// RC rdma write last with immediate (0x09).
    pub const RC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x09);
    /// RC rdma write only (0x0a).
    pub const RC_RDMA_WRITE_ONLY: Opcode = Opcode(0x0a);
    /// RC rdma write only with immediate (0x0b).
    pub const RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x0b);
    /// RC rdma read request (0x0c).
    pub const RC_RDMA_READ_REQUEST: Opcode = Opcode(0x0c);
    /// RC rdma read response first (0x0d).
    pub const RC_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0x0d);
    /// RC rdma read response middle (0x0e).
    pub const RC_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x0e);
    /// RC rdma read response last (0x0f).
    pub const RC_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0x0f);
    /// RC rdma read response only (0x10).
    pub const RC_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0x10);
    /// RC acknowledge (0x11).
    pub const RC_ACKNOWLEDGE: Opcode = Opcode(0x11);
    /// RC atomic acknowledge (0x12).
    pub const RC_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0x12);
    /// RC compare swap (0x13).
    pub const RC_COMPARE_SWAP: Opcode = Opcode(0x13);
    /// RC fetch add (0x14).
    pub const RC_FETCH_ADD: Opcode = Opcode(0x14);
    /// RC send last with invalidate (0x16).
    pub const RC_SEND_LAST_WITH_INVALIDATE: Opcode = Opcode(0x16);
    /// RC send only with invalidate (0x17).
    pub const RC_SEND_ONLY_WITH_INVALIDATE: Opcode = Opcode(0x17);
    /// UC send first (0x20).
    pub const UC_SEND_FIRST: Opcode = Opcode(0x20);
    /// UC send middle (0x21).
    pub const UC_SEND_MIDDLE: Opcode = Opcode(0x21);
    /// UC send last (0x22).
    pub const UC_SEND_LAST: Opcode = Opcode(0x22);
    /// UC send last with immediate (0x23).
    pub const UC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x23);
    /// UC send only (0x24).
    pub const UC_SEND_ONLY: Opcode = Opcode(0x24);
    /// UC send only with immediate (0x25).
    pub const UC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x25);
    /// UC rdma write first (0x26).
    pub const UC_RDMA_WRITE_FIRST: Opcode = Opcode(0x26);
    /// UC rdma write middle (0x27).
    pub const UC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x27);
    /// UC rdma write last (0x28).
    pub const UC_RDMA_WRITE_LAST: Opcode = Opcode(0x28);
    /// UC rdma write last with immediate (0x29).
    pub const UC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x29);
    /// UC rdma write only (0x2a).
    pub const UC_RDMA_WRITE_ONLY: Opcode = Opcode(0x2a);
    /// UC rdma write only with immediate (0x2b).
    pub const UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x2b);
    /// UD send only (0x64).
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    /// UD send only with immediate (0x65).
    pub const UD_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x65);
    /// RoCEv2 congestion notification packet (0x81).
    pub const CNP: Opcode = Opcode(0x81);
}

/// Defines `Opcode` predicates that match the table entry's `$field` (`false` for an opcode not
/// in the table).
macro_rules! table_predicates {
    ($field:ident; $($(#[$doc:meta])* $name:ident => $pattern:pat,)*) => {
        $(
            $(#[$doc])*
            pub fn $name(self) -> bool {
                matches!(self.$field(), Some($pattern))
            }
        )*
    };
}

impl Opcode {
    /// The table entry, or `None` for an opcode we do not speak.
    #[inline]
    pub fn info(self) -> Option<&'static OpcodeInfo> {
        LOOKUP[usize::from(self.0)].as_ref()
    }

    /// The opcode's name, or "unknown".
    pub fn name(self) -> &'static str {
        self.info().map_or("unknown", |i| i.name)
    }

    fn operation(self) -> Option<Operation> {
        self.info().map(|i| i.operation)
    }

    fn position(self) -> Option<Position> {
        self.info().map(|i| i.position)
    }

    /// A congestion notification packet.
    pub fn is_cnp(self) -> bool {
        self.0 == Self::CNP.0
    }

    /// Sent by a requester.
    pub fn is_request(self) -> bool {
        self.info().is_some_and(|i| i.is_request)
    }

    /// Sent by a responder (ACKs, atomic ACKs, READ responses).
    pub fn is_response(self) -> bool {
        self.info()
            .is_some_and(|i| !i.is_request && i.transport != Transport::Cnp)
    }

    /// Carries immediate data.
    pub fn has_immediate(self) -> bool {
        self.info().is_some_and(|i| i.immdt())
    }

    /// Carries an IETH (send with invalidate).
    pub fn has_invalidate(self) -> bool {
        self.info().is_some_and(|i| i.ieth())
    }

    /// One packet of a SEND or RDMA WRITE message: `family` is the message's FIRST opcode
    /// (`RC_SEND_FIRST`, `RC_RDMA_WRITE_FIRST`), and the IBA numbers each family First, Middle,
    /// Last, Last with Immediate, Only, Only with Immediate from there. `imm` matters only for
    /// the packet that ends the message.
    pub fn message_packet(family: Opcode, first: bool, last: bool, imm: bool) -> Opcode {
        let at = match (first, last, imm) {
            (true, false, _) => 0,
            (false, false, _) => 1,
            (false, true, false) => 2,
            (false, true, true) => 3,
            (true, true, false) => 4,
            (true, true, true) => 5,
        };
        Opcode(family.0 + at)
    }

    table_predicates! { operation;
        /// A SEND of any kind.
        is_send => Operation::Send,
        /// An RDMA WRITE of any kind.
        is_write => Operation::Write,
        /// An RDMA READ request.
        is_read_request => Operation::ReadRequest,
        /// An RDMA READ response packet.
        is_read_response => Operation::ReadResponse,
        /// An Acknowledge (ACK or NAK).
        is_ack => Operation::Ack,
        /// An Atomic Acknowledge.
        is_atomic_ack => Operation::AtomicAck,
        /// A compare-and-swap or fetch-and-add request.
        is_atomic => Operation::CompareSwap | Operation::FetchAdd,
    }

    table_predicates! { position;
        /// First packet of a multi-packet message.
        is_first => Position::First,
        /// Middle packet.
        is_middle => Position::Middle,
        /// Last packet of a multi-packet message.
        is_last => Position::Last,
        /// Single-packet message.
        is_only => Position::Only,
        /// Starts a message (First or Only).
        starts_message => Position::First | Position::Only,
        /// Ends a message (Last or Only).
        ends_message => Position::Last | Position::Only,
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// What the table knows about one opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpcodeInfo {
    /// The opcode itself.
    pub opcode: Opcode,
    /// Human name, e.g. "RC SEND Only".
    pub name: &'static str,
    /// Transport service.
    pub transport: Transport,
    /// The operation.
    pub operation: Operation,
    /// Position in the message.
    pub position: Position,
    /// Sent by a requester (false: a response, or a CNP).
    pub is_request: bool,
    /// May carry payload.
    pub has_payload: bool,
    /// The extension headers as a set (the methods [`reth`](Self::reth), [`aeth`](Self::aeth),
    /// ... ask it for one).
    pub ext: ExtHeaders,
    /// Bytes of extension headers after the BTH.
    pub ext_len: usize,
    /// Where each carried extension header starts after the BTH, by its flag bit.
    ext_offsets: [u8; 16],
}

/// Defines `OpcodeInfo` methods that say whether `ext` holds one extension header.
macro_rules! carries {
    ($($(#[$doc:meta])* $name:ident => $header:ident,)*) => {
        $(
            $(#[$doc])*
            #[inline]
            pub const fn $name(&self) -> bool {
                self.ext.contains(ExtHeaders::$header)
            }
        )*
    };
}

impl OpcodeInfo {
    carries! {
        /// Carries a RETH.
        reth => RETH,
        /// Carries an AETH.
        aeth => AETH,
        /// Carries immediate data.
        immdt => IMMDT,
        /// Carries an IETH.
        ieth => IETH,
        /// Carries an AtomicETH.
        atomic_eth => ATOMIC_ETH,
        /// Carries an AtomicAckETH.
        atomic_ack_eth => ATOMIC_ACK_ETH,
        /// Carries a DETH.
        deth => DETH,
        /// Carries an RDETH (never, RD is not in the table).
        rdeth => RDETH,
    }

    /// Where extension header `header` (one flag) starts after the BTH, or `None` when this
    /// opcode does not carry it: lets a reader decode one header without the others.
    #[inline]
    pub fn ext_offset(&self, header: ExtHeaders) -> Option<usize> {
        if header.is_empty() || !self.ext.contains(header) {
            return None;
        }
        let bit = header.0.trailing_zeros() as usize;
        self.ext_offsets.get(bit).map(|&at| usize::from(at))
    }
}

const fn entry(
    opcode: u8,
    name: &'static str,
    operation: Operation,
    position: Position,
    ext: ExtHeaders,
) -> OpcodeInfo {
    let transport = match opcode >> 5 {
        0 => Transport::Rc,
        1 => Transport::Uc,
        3 => Transport::Ud,
        _ => Transport::Cnp,
    };
    let is_request = matches!(
        operation,
        Operation::Send
            | Operation::Write
            | Operation::ReadRequest
            | Operation::CompareSwap
            | Operation::FetchAdd
    );
    let has_payload = matches!(
        operation,
        Operation::Send | Operation::Write | Operation::ReadResponse
    );
    OpcodeInfo {
        opcode: Opcode(opcode),
        name,
        transport,
        operation,
        position,
        is_request,
        has_payload,
        ext,
        ext_len: ext.len(),
        ext_offsets: ext.offsets(),
    }
}

use ExtHeaders as X;
use Operation as O;
use Position as P;

/// The table in opcode order from its three parts. UC's SEND and RDMA WRITE opcodes are RC's
/// plus 0x20, with the same headers, so those rows are written once for both transports.
macro_rules! opcode_table {
    (
        rc_and_uc: [$(($op:literal, $name:literal, $o:ident, $p:ident, $x:expr),)*]
        rc_only: [$($rc:expr,)*]
        ud_and_cnp: [$($other:expr,)*]
    ) => {
        [
            $(entry($op, concat!("RC ", $name), O::$o, P::$p, $x),)*
            $($rc,)*
            $(entry($op + 0x20, concat!("UC ", $name), O::$o, P::$p, $x),)*
            $($other,)*
        ]
    };
}

#[rustfmt::skip]
const TABLE: [OpcodeInfo; 38] = opcode_table! {
    rc_and_uc: [
        (0x00, "SEND First", Send, First, X::NONE),
        (0x01, "SEND Middle", Send, Middle, X::NONE),
        (0x02, "SEND Last", Send, Last, X::NONE),
        (0x03, "SEND Last with Immediate", Send, Last, X::IMMDT),
        (0x04, "SEND Only", Send, Only, X::NONE),
        (0x05, "SEND Only with Immediate", Send, Only, X::IMMDT),
        (0x06, "RDMA WRITE First", Write, First, X::RETH),
        (0x07, "RDMA WRITE Middle", Write, Middle, X::NONE),
        (0x08, "RDMA WRITE Last", Write, Last, X::NONE),
        (0x09, "RDMA WRITE Last with Immediate", Write, Last, X::IMMDT),
        (0x0a, "RDMA WRITE Only", Write, Only, X::RETH),
        (0x0b, "RDMA WRITE Only with Immediate", Write, Only, X::RETH.union(X::IMMDT)),
    ]
    rc_only: [
        entry(0x0c, "RC RDMA READ Request", O::ReadRequest, P::Only, X::RETH),
        entry(0x0d, "RC RDMA READ Response First", O::ReadResponse, P::First, X::AETH),
        entry(0x0e, "RC RDMA READ Response Middle", O::ReadResponse, P::Middle, X::NONE),
        entry(0x0f, "RC RDMA READ Response Last", O::ReadResponse, P::Last, X::AETH),
        entry(0x10, "RC RDMA READ Response Only", O::ReadResponse, P::Only, X::AETH),
        entry(0x11, "RC Acknowledge", O::Ack, P::Only, X::AETH),
        entry(0x12, "RC Atomic Acknowledge", O::AtomicAck, P::Only, X::AETH.union(X::ATOMIC_ACK_ETH)),
        entry(0x13, "RC CmpSwap", O::CompareSwap, P::Only, X::ATOMIC_ETH),
        entry(0x14, "RC FetchAdd", O::FetchAdd, P::Only, X::ATOMIC_ETH),
        entry(0x16, "RC SEND Last with Invalidate", O::Send, P::Last, X::IETH),
        entry(0x17, "RC SEND Only with Invalidate", O::Send, P::Only, X::IETH),
    ]
    ud_and_cnp: [
        entry(0x64, "UD SEND Only", O::Send, P::Only, X::DETH),
        entry(0x65, "UD SEND Only with Immediate", O::Send, P::Only, X::DETH.union(X::IMMDT)),
        entry(0x81, "CNP", O::Cnp, P::Only, X::CNP_RESERVED),
    ]
};

/// Every opcode we speak, in opcode order.
pub static OPCODES: [OpcodeInfo; 38] = TABLE;

const fn build_lookup() -> [Option<OpcodeInfo>; 256] {
    let mut table: [Option<OpcodeInfo>; 256] = [None; 256];
    let mut i = 0;
    while i < TABLE.len() {
        table[TABLE[i].opcode.0 as usize] = Some(TABLE[i]);
        i += 1;
    }
    table
}

static LOOKUP: [Option<OpcodeInfo>; 256] = build_lookup();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_opcodes_follow_the_iba_numbering_of_both_families() {
        for (family, kind) in [
            (Opcode::RC_SEND_FIRST, "SEND"),
            (Opcode::RC_RDMA_WRITE_FIRST, "RDMA WRITE"),
        ] {
            let name = |first, last, imm| Opcode::message_packet(family, first, last, imm).name();
            let want = |what: &str| format!("RC {kind} {what}");
            assert_eq!(name(true, false, false), want("First"));
            assert_eq!(name(false, false, true), want("Middle"));
            assert_eq!(name(false, true, false), want("Last"));
            assert_eq!(name(false, true, true), want("Last with Immediate"));
            assert_eq!(name(true, true, false), want("Only"));
            assert_eq!(name(true, true, true), want("Only with Immediate"));
        }
    }

    #[test]
    fn table_is_sorted_and_lookup_finds_every_entry() {
        for pair in OPCODES.windows(2) {
            assert!(pair[0].opcode < pair[1].opcode, "{:?}", pair[1].opcode);
        }
        for info in &OPCODES {
            assert_eq!(info.opcode.info(), Some(info));
        }
        let known = (0..=255u8).filter(|&b| Opcode(b).info().is_some()).count();
        assert_eq!(known, OPCODES.len());
    }

    #[test]
    fn extension_headers_sit_in_wire_order() {
        let at = |o: Opcode, h: ExtHeaders| o.info().unwrap().ext_offset(h);
        let w = Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
        assert_eq!((at(w, X::RETH), at(w, X::IMMDT)), (Some(0), Some(16)));
        assert_eq!(at(w, X::AETH), None);
        let a = Opcode::RC_ATOMIC_ACKNOWLEDGE;
        assert_eq!(
            (at(a, X::AETH), at(a, X::ATOMIC_ACK_ETH)),
            (Some(0), Some(4))
        );
        let u = Opcode::UD_SEND_ONLY_WITH_IMMEDIATE;
        assert_eq!((at(u, X::DETH), at(u, X::IMMDT)), (Some(0), Some(8)));
        assert_eq!(at(Opcode::RC_COMPARE_SWAP, X::ATOMIC_ETH), Some(0));
        assert_eq!(at(Opcode::RC_SEND_ONLY, X::NONE), None);
        // Every carried header ends within the extension headers.
        for info in &OPCODES {
            for (h, size) in ExtHeaders::WIRE_ORDER {
                if let Some(o) = info.ext_offset(h) {
                    assert!(o + size <= info.ext_len, "{:?}", info.opcode);
                }
            }
        }
    }

    #[test]
    fn extension_header_lengths_match_rxe() {
        let len = |o: Opcode| o.info().unwrap().ext_len;
        assert_eq!(len(Opcode::RC_SEND_ONLY), 0);
        assert_eq!(len(Opcode::RC_RDMA_WRITE_ONLY), 16);
        assert_eq!(len(Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE), 20);
        assert_eq!(len(Opcode::RC_ACKNOWLEDGE), 4);
        assert_eq!(len(Opcode::RC_ATOMIC_ACKNOWLEDGE), 12);
        assert_eq!(len(Opcode::RC_COMPARE_SWAP), 28);
        assert_eq!(len(Opcode::RC_RDMA_READ_RESPONSE_MIDDLE), 0);
        assert_eq!(len(Opcode::RC_RDMA_READ_RESPONSE_FIRST), 4);
        assert_eq!(len(Opcode::RC_SEND_ONLY_WITH_INVALIDATE), 4);
        assert_eq!(len(Opcode::UD_SEND_ONLY_WITH_IMMEDIATE), 12);
        assert_eq!(len(Opcode::CNP), 16);
    }

    #[test]
    fn predicates_classify_opcodes() {
        assert!(Opcode::RC_SEND_LAST_WITH_IMMEDIATE.is_send());
        assert!(Opcode::RC_SEND_LAST_WITH_IMMEDIATE.is_last());
        assert!(Opcode::RC_SEND_LAST_WITH_IMMEDIATE.has_immediate());
        assert!(Opcode::UC_RDMA_WRITE_MIDDLE.is_write());
        assert!(Opcode::UC_RDMA_WRITE_MIDDLE.is_middle());
        assert!(Opcode::RC_RDMA_READ_RESPONSE_ONLY.is_read_response());
        assert!(Opcode::RC_RDMA_READ_RESPONSE_ONLY.is_response());
        assert!(!Opcode::RC_RDMA_READ_REQUEST.info().unwrap().has_payload);
        assert!(Opcode::RC_FETCH_ADD.is_atomic());
        assert!(Opcode::RC_FETCH_ADD.is_request());
        assert!(Opcode::RC_ACKNOWLEDGE.is_ack());
        assert!(!Opcode::RC_ACKNOWLEDGE.is_request());
        assert!(Opcode::CNP.is_cnp());
        assert!(!Opcode::CNP.is_request() && !Opcode::CNP.is_response());
        assert_eq!(Opcode::CNP.info().unwrap().transport, Transport::Cnp);
        assert_eq!(
            Opcode::UD_SEND_ONLY.info().unwrap().transport,
            Transport::Ud
        );
        assert!(Opcode(0x15).info().is_none());
        assert!(Opcode(0x40).info().is_none());
        assert!(!Opcode(0x15).is_send());
    }

    #[test]
    fn display_names_and_number() {
        assert_eq!(Opcode::RC_SEND_ONLY.to_string(), "RC SEND Only (4)");
        assert_eq!(Opcode(0xff).to_string(), "unknown (255)");
    }
}
