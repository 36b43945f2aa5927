//! The INT shim: per-hop in-band telemetry (time, queue, transmitted bytes, link rate) that HPCC
//! needs, carried between the UDP header and the BTH of a RoCEv2 frame without breaking its ICRC.
//! Zero-copy view, `Repr`, and the frame-level [`insert`] and [`strip`]; no policy here.
//!
//! # Why a shim, and why it is RoCE-safe
//! The ICRC covers the IP header (but for TOS, TTL and checksum), the UDP header (but for its
//! checksum), the BTH and everything after, so a switch cannot add bytes inside a plain RoCEv2
//! frame. Instead:
//! 1. The sender emits the frame normally, ICRC included, then [`insert`]s an empty shim with
//!    room for `max_hops` records right after the UDP header, grows the IP and UDP lengths, fixes
//!    the IPv4 checksum and moves the UDP destination port from 4791 to [`INT_UDP_PORT`]. The
//!    ICRC still describes the frame *without* the shim.
//! 2. Every INT switch writes its [`HopRecord`] into the next free slot at egress ([`push_hop`])
//!    and bumps the count. Slots are pre-allocated, so the frame's length never changes on the
//!    path: no IP/UDP length rewrite, no buffer growth in the switch, a bounded overhead the
//!    sender budgets for (`4 + 24 * max_hops` bytes). Switches without INT forward the frame as
//!    any UDP packet.
//! 3. The receiver [`strip`]s the shim, restoring port 4791, both lengths and the IPv4 checksum:
//!    the result is byte-for-byte the frame the sender built (modulo the masked fields), and the
//!    ordinary parser verifies the original ICRC.
//! 4. The receiver echoes the records to the sender in a shim on its next ACK for that QP, with
//!    the [`FLAG_ECHO`] flag set (switches never add to an echo); the sender strips it the same
//!    way and hands the records to its congestion controller.
//!
//! Only INT-aware roce endpoints send to [`INT_UDP_PORT`]; a stock RoCE NIC would see a UDP
//! packet to an unknown port and drop it rather than misread it, so the shim must only be
//! enabled between INT-aware peers.
//!
//! # Layout (big-endian)
//! ```text
//!  0       4       8              16              24
//! +-------+-------+-------+-------+
//! | ver=1 | flags | hop count     | max hops      | reserved (0)  |   4-byte header
//! +-------+-------+---------------+---------------+---------------+
//! | record 0 .. record max_hops-1, 24 bytes each:                  |
//! |   timestamp ns (u64) | tx bytes (u64) | queue bytes (u32) | link Mbit/s (u32)
//! +----------------------------------------------------------------+
//! ```
//! Records are in path order (first switch first). The timestamp is the switch's own clock at
//! egress and the tx-bytes a free-running counter of the egress port: only differences between
//! two packets of the same flow matter.

use super::{
    ethernet, ipv4, ipv6, read_u16, read_u32, read_u64, udp, write_u16, write_u32, write_u64,
    EtherType, WireError, ROCE_UDP_PORT,
};

/// The UDP destination port that announces a shim (a roce convention, not an IANA assignment).
pub const INT_UDP_PORT: u16 = 4792;
/// The shim version this code reads and writes.
pub const VERSION: u8 = 1;
/// Length of the shim header.
pub const HEADER_LEN: usize = 4;
/// Length of one hop record.
pub const HOP_LEN: usize = 24;
/// The most records a shim may hold.
pub const MAX_HOPS: usize = 8;
/// Flag: the records are an echo from the receiver (on an ACK); switches add nothing.
pub const FLAG_ECHO: u8 = 0x1;

mod field {
    pub const VER_FLAGS: usize = 0;
    pub const HOP_COUNT: usize = 1;
    pub const MAX_HOPS: usize = 2;
    pub const TS: usize = 0;
    pub const TX_BYTES: usize = 8;
    pub const QLEN: usize = 16;
    pub const RATE: usize = 20;
}

/// The shim's length for `max_hops` slots.
pub const fn shim_len(max_hops: u8) -> usize {
    HEADER_LEN + HOP_LEN * max_hops as usize
}

/// One switch egress port's telemetry, as written into a slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HopRecord {
    /// The switch's clock when the packet left, ns.
    pub ts_ns: u64,
    /// Bytes the egress port has transmitted so far.
    pub tx_bytes: u64,
    /// Bytes queued at the egress port (saturates at `u32::MAX`).
    pub qlen_bytes: u32,
    /// The egress port's line rate, Mbit/s.
    pub link_mbps: u32,
}

impl HopRecord {
    /// Reads a record from the first [`HOP_LEN`] bytes of `b` (`None` if shorter).
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b = b.get(..HOP_LEN)?;
        Some(HopRecord {
            ts_ns: read_u64(b, field::TS),
            tx_bytes: read_u64(b, field::TX_BYTES),
            qlen_bytes: read_u32(b, field::QLEN),
            link_mbps: read_u32(b, field::RATE),
        })
    }

    /// The [`HOP_LEN`] bytes of this record.
    pub fn to_bytes(&self) -> [u8; HOP_LEN] {
        let mut b = [0u8; HOP_LEN];
        write_u64(&mut b, field::TS, self.ts_ns);
        write_u64(&mut b, field::TX_BYTES, self.tx_bytes);
        write_u32(&mut b, field::QLEN, self.qlen_bytes);
        write_u32(&mut b, field::RATE, self.link_mbps);
        b
    }
}

/// A read/write view of a shim in a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it (accessors may then panic).
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Truncated` when the buffer ends before the header or the slots it announces,
    /// `BadVersion` for another version, `BadLength` when the counts are inconsistent.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        let head = b.get(..HEADER_LEN).ok_or(WireError::Truncated)?;
        let version = head[field::VER_FLAGS] >> 4;
        if version != VERSION {
            return Err(WireError::BadVersion(version));
        }
        let (count, max) = (head[field::HOP_COUNT], head[field::MAX_HOPS]);
        if usize::from(max) > MAX_HOPS || count > max {
            return Err(WireError::BadLength);
        }
        if b.len() < shim_len(max) {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version nibble.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] >> 4
    }

    /// The flag nibble.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] & 0x0f
    }

    /// Records present.
    pub fn hop_count(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_COUNT]
    }

    /// Slots present (filled or not).
    pub fn max_hops(&self) -> u8 {
        self.buffer.as_ref()[field::MAX_HOPS]
    }

    /// The whole shim's length.
    pub fn shim_len(&self) -> usize {
        shim_len(self.max_hops())
    }

    /// Record `i`, if filled.
    pub fn hop(&self, i: usize) -> Option<HopRecord> {
        if i >= usize::from(self.hop_count()) {
            return None;
        }
        HopRecord::parse(self.buffer.as_ref().get(HEADER_LEN + i * HOP_LEN..)?)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Writes the header fields.
    pub fn set_header(&mut self, flags: u8, hop_count: u8, max_hops: u8) {
        let b = self.buffer.as_mut();
        b[field::VER_FLAGS] = (VERSION << 4) | (flags & 0x0f);
        b[field::HOP_COUNT] = hop_count;
        b[field::MAX_HOPS] = max_hops;
        b[3] = 0;
    }

    /// Writes `rec` into slot `i` (no-op outside the buffer).
    pub fn set_hop(&mut self, i: usize, rec: &HopRecord) {
        let at = HEADER_LEN + i * HOP_LEN;
        if let Some(slot) = self.buffer.as_mut().get_mut(at..at + HOP_LEN) {
            slot.copy_from_slice(&rec.to_bytes());
        }
    }

    /// What a switch does: writes `rec` into the next free slot and counts it. Returns `false`
    /// (and changes nothing) for an echo or when every slot is taken.
    pub fn push_hop(&mut self, rec: &HopRecord) -> bool {
        let (count, max) = (self.hop_count(), self.max_hops());
        if self.flags() & FLAG_ECHO != 0 || count >= max {
            return false;
        }
        self.set_hop(usize::from(count), rec);
        self.buffer.as_mut()[field::HOP_COUNT] = count + 1;
        true
    }
}

/// A parsed shim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Repr {
    /// An echo from the receiver rather than a collecting shim.
    pub echo: bool,
    /// Slots to carry (at least `hop_count`, at most [`MAX_HOPS`]).
    pub max_hops: u8,
    /// Records present.
    pub hop_count: u8,
    /// The records; only the first `hop_count` are meaningful.
    pub hops: [HopRecord; MAX_HOPS],
}

impl Repr {
    /// An empty collecting shim with `max_hops` slots (clamped to [`MAX_HOPS`]).
    pub fn collect(max_hops: u8) -> Self {
        Repr {
            max_hops: max_hops.min(MAX_HOPS as u8),
            ..Repr::default()
        }
    }

    /// An echo of `records` (at most [`MAX_HOPS`] are kept), with exactly that many slots.
    pub fn echo_of(records: &[HopRecord]) -> Self {
        let mut r = Repr {
            echo: true,
            ..Repr::default()
        };
        for (slot, rec) in r.hops.iter_mut().zip(records) {
            *slot = *rec;
            r.hop_count += 1;
        }
        r.max_hops = r.hop_count;
        r
    }

    /// The filled records, in path order.
    pub fn records(&self) -> &[HopRecord] {
        self.hops.get(..usize::from(self.hop_count)).unwrap_or(&[])
    }

    /// Parses a checked shim.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        let mut r = Repr {
            echo: packet.flags() & FLAG_ECHO != 0,
            max_hops: packet.max_hops(),
            hop_count: packet.hop_count(),
            hops: [HopRecord::default(); MAX_HOPS],
        };
        for (i, slot) in r.hops.iter_mut().enumerate().take(usize::from(r.hop_count)) {
            *slot = packet.hop(i).ok_or(WireError::Truncated)?;
        }
        Ok(r)
    }

    /// The shim's length on the wire.
    pub const fn buffer_len(&self) -> usize {
        shim_len(self.max_hops)
    }

    /// Writes exactly `buffer_len()` bytes (empty slots zeroed).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        let flags = if self.echo { FLAG_ECHO } else { 0 };
        let count = self.hop_count.min(self.max_hops);
        packet.set_header(flags, count, self.max_hops);
        for i in 0..usize::from(self.max_hops) {
            let rec = match self.hops.get(i) {
                Some(r) if i < usize::from(count) => *r,
                _ => HopRecord::default(),
            };
            packet.set_hop(i, &rec);
        }
    }
}

/// Where a frame's IP and UDP headers start.
#[derive(Clone, Copy, Debug)]
struct Layout {
    ip: usize,
    v6: bool,
    udp: usize,
    udp_end: usize,
}

fn locate(frame: &[u8]) -> Result<Layout, WireError> {
    let eth = ethernet::Frame::new_checked(frame)?;
    let ip = eth.header_len();
    let ethertype = ethernet::Repr::parse(&eth)?.ethertype;
    let rest = frame.get(ip..).ok_or(WireError::Truncated)?;
    let (v6, ip_len, total) = match ethertype {
        EtherType::Ipv4 => {
            let p = ipv4::Packet::new_checked(rest)?;
            if p.protocol() != ipv4::PROTOCOL_UDP {
                return Err(WireError::NotRoce);
            }
            (false, p.header_len(), usize::from(p.total_len()))
        }
        EtherType::Ipv6 => {
            let p = ipv6::Packet::new_checked(rest)?;
            if p.next_header() != ipv4::PROTOCOL_UDP {
                return Err(WireError::NotRoce);
            }
            (
                true,
                ipv6::HEADER_LEN,
                ipv6::HEADER_LEN + usize::from(p.payload_len()),
            )
        }
        _ => return Err(WireError::NotRoce),
    };
    let udp = ip + ip_len;
    if frame.len() < ip + total || total < ip_len + udp::HEADER_LEN {
        return Err(WireError::Truncated);
    }
    Ok(Layout {
        ip,
        v6,
        udp,
        udp_end: udp + udp::HEADER_LEN,
    })
}

/// Where the shim of `frame` starts, when it carries one (IP/UDP to [`INT_UDP_PORT`]).
pub fn shim_offset(frame: &[u8]) -> Option<usize> {
    let l = locate(frame).ok()?;
    (read_u16(frame, l.udp + udp::field::DST_PORT) == INT_UDP_PORT).then_some(l.udp_end)
}

/// Adds `delta` (may be negative) to the IP and UDP lengths, sets the UDP destination port and
/// refreshes the IPv4 checksum.
fn relength(frame: &mut [u8], l: &Layout, delta: isize, dport: u16) -> Result<(), WireError> {
    let adjust = |v: u16| {
        u16::try_from(v as isize + delta)
            .ok()
            .ok_or(WireError::BadLength)
    };
    let udp_len = adjust(read_u16(frame, l.udp + udp::field::LENGTH))?;
    let at = l.ip
        + if l.v6 {
            ipv6::field::LENGTH
        } else {
            ipv4::field::LENGTH
        };
    let ip_len = adjust(read_u16(frame, at))?;
    write_u16(frame, l.udp + udp::field::DST_PORT, dport);
    write_u16(frame, l.udp + udp::field::LENGTH, udp_len);
    write_u16(frame, at, ip_len);
    if !l.v6 {
        // `locate` checked the whole header (options included) is in the frame.
        let header = frame.get_mut(l.ip..l.udp).ok_or(WireError::Truncated)?;
        ipv4::Packet::new_unchecked(header).fill_checksum();
    }
    Ok(())
}

/// Inserts `shim` after the UDP header of the RoCEv2 frame `frame[..len]` (built with its ICRC,
/// UDP port 4791), in place; returns the new length. `BufferTooSmall` when `frame` has no room.
pub fn insert(frame: &mut [u8], len: usize, shim: &Repr) -> Result<usize, WireError> {
    let l = locate(frame.get(..len).ok_or(WireError::Truncated)?)?;
    if read_u16(frame, l.udp + udp::field::DST_PORT) != ROCE_UDP_PORT {
        return Err(WireError::NotRoce);
    }
    let extra = shim.buffer_len();
    let new_len = len + extra;
    if frame.len() < new_len {
        return Err(WireError::BufferTooSmall);
    }
    relength(frame, &l, extra as isize, INT_UDP_PORT)?;
    frame.copy_within(l.udp_end..len, l.udp_end + extra);
    let slot = frame
        .get_mut(l.udp_end..l.udp_end + extra)
        .ok_or(WireError::Truncated)?;
    shim.emit(&mut Packet::new_unchecked(slot));
    Ok(new_len)
}

/// Copies `frame` without its shim into `out` and restores UDP port 4791, the lengths and the
/// IPv4 checksum, so the ICRC the sender computed verifies again. Returns the restored length
/// and the shim. `NotRoce` when the frame carries no shim.
pub fn strip(frame: &[u8], out: &mut [u8]) -> Result<(usize, Repr), WireError> {
    let l = locate(frame)?;
    if read_u16(frame, l.udp + udp::field::DST_PORT) != INT_UDP_PORT {
        return Err(WireError::NotRoce);
    }
    let shim_bytes = frame.get(l.udp_end..).ok_or(WireError::Truncated)?;
    let shim = Repr::parse(&Packet::new_checked(shim_bytes)?)?;
    let extra = shim.buffer_len();
    let new_len = frame.len() - extra.min(frame.len());
    let dst = out.get_mut(..new_len).ok_or(WireError::BufferTooSmall)?;
    let rest = frame.get(l.udp_end + extra..).ok_or(WireError::Truncated)?;
    let (head, tail) = dst.split_at_mut(l.udp_end);
    head.copy_from_slice(&frame[..l.udp_end]);
    tail.copy_from_slice(rest);
    relength(dst, &l, -(extra as isize), ROCE_UDP_PORT)?;
    Ok((new_len, shim))
}

/// What an INT switch does at egress: appends `rec` to a collecting shim in `frame`. Returns
/// whether a record was written (`false`: no shim, an echo, or no free slot).
pub fn push_hop(frame: &mut [u8], rec: &HopRecord) -> bool {
    let Some(at) = shim_offset(frame) else {
        return false;
    };
    match frame.get_mut(at..).map(Packet::new_checked) {
        Some(Ok(mut p)) => p.push_hop(rec),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shim_round_trips_through_bytes_and_refuses_bad_counts() {
        let rec = HopRecord {
            ts_ns: 0x0102_0304_0506_0708,
            tx_bytes: 77,
            qlen_bytes: 4096,
            link_mbps: 100_000,
        };
        let mut r = Repr::collect(3);
        r.hops[0] = rec;
        r.hop_count = 1;
        let mut buf = [0xa5u8; 4 + 3 * 24];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..4], &[0x10, 1, 3, 0]);
        assert_eq!(&buf[4..12], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&buf[24..28], &100_000u32.to_be_bytes());
        assert_eq!(Repr::parse(&Packet::new_checked(&buf[..]).unwrap()), Ok(r));
        buf[1] = 4;
        assert_eq!(
            Packet::new_checked(&buf[..]).err(),
            Some(WireError::BadLength)
        );
        assert_eq!(
            Packet::new_checked(&buf[..50]).err(),
            Some(WireError::BadLength)
        );
        buf[1] = 1;
        assert_eq!(
            Packet::new_checked(&buf[..50]).err(),
            Some(WireError::Truncated)
        );
        buf[0] = 0x20;
        assert_eq!(
            Packet::new_checked(&buf[..]).err(),
            Some(WireError::BadVersion(2))
        );
    }

    #[test]
    fn switches_fill_free_slots_in_order_and_never_touch_an_echo() {
        let mut buf = [0u8; 4 + 2 * 24];
        Repr::collect(2).emit(&mut Packet::new_unchecked(&mut buf[..]));
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        let hop = |t| HopRecord {
            ts_ns: t,
            ..HopRecord::default()
        };
        assert!(p.push_hop(&hop(1)));
        assert!(p.push_hop(&hop(2)));
        assert!(!p.push_hop(&hop(3)));
        assert_eq!(
            (p.hop(0), p.hop(1), p.hop(2)),
            (Some(hop(1)), Some(hop(2)), None)
        );
        let mut echo = [0u8; 4 + 24];
        Repr::echo_of(&[hop(9)]).emit(&mut Packet::new_unchecked(&mut echo[..]));
        assert!(!Packet::new_checked(&mut echo[..])
            .unwrap()
            .push_hop(&hop(4)));
    }
}
