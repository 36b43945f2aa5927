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
//!    sender budgets for (`4 + 10 * max_hops` bytes). A switch that finds every slot taken
//!    writes nothing but still counts itself, so the receiver knows how many records were
//!    dropped. Switches without INT forward the frame as any UDP packet.
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
//! # Layout (big-endian), version 2
//! ```text
//!  0       4       8              16              24              32
//! +-------+-------+---------------+---------------+---------------+
//! | ver=2 | flags | hop count     | max hops      | units m       |   4-byte header
//! +-------+-------+---------------+---------------+---------------+
//! | record 0 .. record max_hops-1, 10 bytes each:                  |
//! |   time (24 bits) | tx (20 bits) | queue (20 bits) | rate (16 bits)
//! +----------------------------------------------------------------+
//! ```
//! - *hop count* counts the switches that met the shim, past `max hops` when some found no free
//!   slot (the records present are the first `min(hop count, max hops)`).
//! - *units m* (1 to 255; 0 reads as 1) scales the two byte fields, as the HPCC authors' ns-3
//!   model's `INT_MULTI` does: the sender chooses it so that a port's counters neither wrap
//!   too often nor saturate at its rate.
//! - *time* is the switch's clock at egress in ns, modulo 2^24 (16.8 ms).
//! - *tx* is the egress port's free-running transmitted-byte counter in units of 128·m bytes,
//!   modulo 2^20 (134 MB·m).
//! - *queue* is the bytes queued at the egress port in units of 80·m bytes (truncated, as ns-3
//!   quantizes it), saturating at 2^20 − 1 units.
//! - *rate* is the port's line rate in units of 100 Mbit/s.
//!
//! Records are in path order (first switch first). Only differences between two records of the
//! same port matter, and a reader takes them modulo the field's range ([`TS_WRAP_NS`],
//! [`tx_wrap_bytes`]): one wrap between two packets of a flow is told apart, as ns-3's
//! `IntHop::GetTimeDelta`/`GetBytesDelta` do. The fields are ns-3's `IntHop` (24-bit time,
//! 20-bit bytes in 128·m units, queue in 80·m units) with the 3-bit index into five link rates
//! widened to a rate of its own and the queue to 20 bits, so any link rate fits.

use super::{
    ethernet, ipv4, ipv6, read_u16, read_u64, udp, write_u16, write_u64, EtherType, WireError,
    ROCE_UDP_PORT,
};

/// The UDP destination port that announces a shim (a roce convention, not an IANA assignment).
pub const INT_UDP_PORT: u16 = 4792;
/// The shim version this code reads and writes.
pub const VERSION: u8 = 2;
/// Length of the shim header.
pub const HEADER_LEN: usize = 4;
/// Length of one hop record.
pub const HOP_LEN: usize = 10;
/// The most records a shim may hold.
pub const MAX_HOPS: usize = 8;
/// Flag: the records are an echo from the receiver (on an ACK); switches add nothing.
pub const FLAG_ECHO: u8 = 0x1;
/// The time field's range, ns: timestamps are taken modulo this.
pub const TS_WRAP_NS: u64 = 1 << TS_BITS;
/// Bytes per unit of the tx field at units 1 (ns-3's `IntHop::byteUnit`).
pub const TX_UNIT_BYTES: u64 = 128;
/// Bytes per unit of the queue field at units 1 (ns-3's `IntHop::qlenUnit`).
pub const QLEN_UNIT_BYTES: u64 = 80;
/// Bit/s per unit of the rate field.
pub const RATE_UNIT_BPS: u64 = 100_000_000;

const TS_BITS: u32 = 24;
const TX_BITS: u32 = 20;
const QLEN_BITS: u32 = 20;
const TX_MASK: u64 = (1 << TX_BITS) - 1;
const QLEN_MAX: u64 = (1 << QLEN_BITS) - 1;

mod field {
    pub const VER_FLAGS: usize = 0;
    pub const HOP_COUNT: usize = 1;
    pub const MAX_HOPS: usize = 2;
    pub const UNITS: usize = 3;
    /// Time, tx and queue packed into one big-endian u64 of each record.
    pub const PACKED: usize = 0;
    pub const RATE: usize = 8;
}

/// The shim's length for `max_hops` slots.
pub const fn shim_len(max_hops: u8) -> usize {
    HEADER_LEN + HOP_LEN * max_hops as usize
}

/// The units multiplier as read from a header byte (0 reads as 1).
const fn units(m: u8) -> u64 {
    if m == 0 {
        1
    } else {
        m as u64
    }
}

/// Where the tx field of records with units `m` wraps, bytes.
pub const fn tx_wrap_bytes(m: u8) -> u64 {
    (TX_MASK + 1) * TX_UNIT_BYTES * units(m)
}

/// One switch egress port's telemetry. A switch stamps it with exact values; written into a
/// slot it is quantized to the shim's units, and read back it holds what the slot says (time
/// modulo [`TS_WRAP_NS`], tx modulo [`tx_wrap_bytes`], both byte counts in whole units).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HopRecord {
    /// The switch's clock when the packet left, ns.
    pub ts_ns: u64,
    /// Bytes the egress port has transmitted so far.
    pub tx_bytes: u64,
    /// Bytes queued at the egress port.
    pub qlen_bytes: u64,
    /// The egress port's line rate, bit/s.
    pub rate_bps: u64,
}

impl HopRecord {
    /// Reads a record with units `m` from the first [`HOP_LEN`] bytes of `b` (`None` if shorter).
    pub fn parse(b: &[u8], m: u8) -> Option<Self> {
        let b = b.get(..HOP_LEN)?;
        let packed = read_u64(b, field::PACKED);
        Some(HopRecord {
            ts_ns: packed >> (TX_BITS + QLEN_BITS),
            tx_bytes: ((packed >> QLEN_BITS) & TX_MASK) * TX_UNIT_BYTES * units(m),
            qlen_bytes: (packed & QLEN_MAX) * QLEN_UNIT_BYTES * units(m),
            rate_bps: u64::from(read_u16(b, field::RATE)) * RATE_UNIT_BPS,
        })
    }

    /// The [`HOP_LEN`] bytes of this record at units `m`: quantized (truncating), the time and
    /// tx fields wrapped, the queue and the rate saturated.
    pub fn to_bytes(&self, m: u8) -> [u8; HOP_LEN] {
        let ts = self.ts_ns % TS_WRAP_NS;
        let tx = (self.tx_bytes / (TX_UNIT_BYTES * units(m))) & TX_MASK;
        let qlen = (self.qlen_bytes / (QLEN_UNIT_BYTES * units(m))).min(QLEN_MAX);
        let rate = u16::try_from(self.rate_bps / RATE_UNIT_BPS).unwrap_or(u16::MAX);
        let mut b = [0u8; HOP_LEN];
        write_u64(
            &mut b,
            field::PACKED,
            ts << (TX_BITS + QLEN_BITS) | tx << QLEN_BITS | qlen,
        );
        write_u16(&mut b, field::RATE, rate);
        b
    }
}

header_view!(Packet, WireError, "an INT shim");

impl<T: AsRef<[u8]>> Packet<T> {
    /// `Truncated` when the buffer ends before the header or the slots it announces,
    /// `BadVersion` for another version, `BadLength` for more slots than [`MAX_HOPS`].
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        let head = b.get(..HEADER_LEN).ok_or(WireError::Truncated)?;
        let version = head[field::VER_FLAGS] >> 4;
        if version != VERSION {
            return Err(WireError::BadVersion(version));
        }
        let max = head[field::MAX_HOPS];
        if usize::from(max) > MAX_HOPS {
            return Err(WireError::BadLength);
        }
        if b.len() < shim_len(max) {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The version nibble.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] >> 4
    }

    /// The flag nibble.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] & 0x0f
    }

    /// Switches that met the shim (past [`Self::max_hops`] when some found no free slot).
    pub fn hop_count(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_COUNT]
    }

    /// Slots present (filled or not).
    pub fn max_hops(&self) -> u8 {
        self.buffer.as_ref()[field::MAX_HOPS]
    }

    /// Records present: the first `min(hop count, max hops)` slots.
    pub fn records(&self) -> u8 {
        self.hop_count().min(self.max_hops())
    }

    /// The units multiplier m of the byte fields (1 to 255).
    pub fn units(&self) -> u8 {
        units(self.buffer.as_ref()[field::UNITS]) as u8
    }

    /// The whole shim's length.
    pub fn shim_len(&self) -> usize {
        shim_len(self.max_hops())
    }

    /// Record `i`, if filled.
    pub fn hop(&self, i: usize) -> Option<HopRecord> {
        if i >= usize::from(self.records()) {
            return None;
        }
        let at = HEADER_LEN + i * HOP_LEN;
        HopRecord::parse(self.buffer.as_ref().get(at..)?, self.units())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Writes the header fields.
    pub fn set_header(&mut self, flags: u8, hop_count: u8, max_hops: u8, units: u8) {
        let b = self.buffer.as_mut();
        b[field::VER_FLAGS] = (VERSION << 4) | (flags & 0x0f);
        b[field::HOP_COUNT] = hop_count;
        b[field::MAX_HOPS] = max_hops;
        b[field::UNITS] = units.max(1);
    }

    /// Writes `rec` into slot `i` at the shim's units (no-op outside the buffer).
    pub fn set_hop(&mut self, i: usize, rec: &HopRecord) {
        let bytes = rec.to_bytes(self.units());
        let at = HEADER_LEN + i * HOP_LEN;
        if let Some(slot) = self.buffer.as_mut().get_mut(at..at + HOP_LEN) {
            slot.copy_from_slice(&bytes);
        }
    }

    /// What a switch does: writes `rec` into the next free slot and counts itself. Returns
    /// whether the record was written: `false` for an echo (left unchanged) and when every
    /// slot is taken (then only the count grows, up to 255).
    pub fn push_hop(&mut self, rec: &HopRecord) -> bool {
        let (count, max) = (self.hop_count(), self.max_hops());
        if self.flags() & FLAG_ECHO != 0 {
            return false;
        }
        let written = count < max;
        if written {
            self.set_hop(usize::from(count), rec);
        }
        self.buffer.as_mut()[field::HOP_COUNT] = count.saturating_add(1);
        written
    }
}

/// A parsed shim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Repr {
    /// An echo from the receiver rather than a collecting shim.
    pub echo: bool,
    /// Slots to carry (at most [`MAX_HOPS`]).
    pub max_hops: u8,
    /// Switches that met the shim; records present are the first `min(hop_count, max_hops)`.
    pub hop_count: u8,
    /// The units multiplier m of the byte fields (1 to 255).
    pub units: u8,
    /// The records; only the first [`Repr::records`] are meaningful.
    pub hops: [HopRecord; MAX_HOPS],
}

impl Repr {
    /// An empty collecting shim with `max_hops` slots (clamped to [`MAX_HOPS`]) at units `m`.
    pub fn collect(max_hops: u8, m: u8) -> Self {
        Repr {
            max_hops: max_hops.min(MAX_HOPS as u8),
            units: m.max(1),
            ..Repr::default()
        }
    }

    /// An echo of `records` at units `m` (at most [`MAX_HOPS`] are kept), with exactly that
    /// many slots.
    pub fn echo_of(records: &[HopRecord], m: u8) -> Self {
        let mut r = Repr {
            echo: true,
            units: m.max(1),
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
        let n = self.hop_count.min(self.max_hops);
        self.hops.get(..usize::from(n)).unwrap_or(&[])
    }

    /// Records the switches could not write (every slot was taken).
    pub fn dropped(&self) -> u8 {
        self.hop_count.saturating_sub(self.max_hops)
    }

    /// Parses a checked shim.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        let mut r = Repr {
            echo: packet.flags() & FLAG_ECHO != 0,
            max_hops: packet.max_hops(),
            hop_count: packet.hop_count(),
            units: packet.units(),
            hops: [HopRecord::default(); MAX_HOPS],
        };
        for (i, slot) in r
            .hops
            .iter_mut()
            .enumerate()
            .take(usize::from(packet.records()))
        {
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
        packet.set_header(flags, self.hop_count, self.max_hops, self.units);
        let filled = self.records().len();
        for i in 0..usize::from(self.max_hops) {
            let rec = match self.hops.get(i) {
                Some(r) if i < filled => *r,
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
/// whether a record was written (`false`: no shim, an echo, or no free slot; in the last case
/// the shim still counts the switch).
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
            tx_bytes: 128 * 77 + 5,
            qlen_bytes: 80 * 51 + 79,
            rate_bps: 100_000_000_000,
        };
        let mut r = Repr::collect(3, 1);
        r.hops[0] = rec;
        r.hop_count = 1;
        let mut buf = [0xa5u8; 4 + 3 * 10];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..4], &[0x20, 1, 3, 1]);
        // time 0x060708 (mod 2^24), tx 77 units, queue 51 units; 1000 x 100 Mbit/s.
        let packed: u64 = 0x06_0708 << 40 | 77 << 20 | 51;
        assert_eq!(&buf[4..12], &packed.to_be_bytes());
        assert_eq!(&buf[12..14], &1000u16.to_be_bytes());
        assert_eq!(&buf[14..], &[0; 20], "empty slots are zeroed");
        let read = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap();
        let quantized = HopRecord {
            ts_ns: 0x06_0708,
            tx_bytes: 128 * 77,
            qlen_bytes: 80 * 51,
            rate_bps: 100_000_000_000,
        };
        assert_eq!(read.records(), &[quantized]);
        // Read back and written again, a record keeps its bytes (echoes are exact).
        assert_eq!(quantized.to_bytes(1), rec.to_bytes(1));
        buf[2] = 9;
        assert_eq!(
            Packet::new_checked(&buf[..]).err(),
            Some(WireError::BadLength)
        );
        buf[2] = 3;
        assert_eq!(
            Packet::new_checked(&buf[..20]).err(),
            Some(WireError::Truncated)
        );
        buf[0] = 0x10;
        assert_eq!(
            Packet::new_checked(&buf[..]).err(),
            Some(WireError::BadVersion(1))
        );
    }

    #[test]
    fn units_scale_the_byte_fields_which_wrap_or_saturate_at_their_width() {
        let rec = |tx_bytes, qlen_bytes| HopRecord {
            ts_ns: TS_WRAP_NS + 5,
            tx_bytes,
            qlen_bytes,
            rate_bps: 400_000_000_000,
        };
        // Units 4 (ns-3's INT_MULTI at 100G): 512-byte tx units, 320-byte queue units; a queue
        // under one unit reads as empty, as in ns-3.
        let r = HopRecord::parse(&rec(1_000_000, 319).to_bytes(4), 4).unwrap();
        assert_eq!(
            (r.ts_ns, r.tx_bytes, r.qlen_bytes, r.rate_bps),
            (5, 1_000_000 / 512 * 512, 0, 400_000_000_000)
        );
        let wrap = tx_wrap_bytes(4);
        assert_eq!(wrap, (1 << 20) * 512);
        let r = HopRecord::parse(&rec(wrap + 1024, 1 << 40).to_bytes(4), 4).unwrap();
        assert_eq!(r.tx_bytes, 1024, "tx is taken modulo its range");
        assert_eq!(r.qlen_bytes, ((1 << 20) - 1) * 320, "the queue saturates");
        // Units 0 in a header reads as 1.
        let mut buf = [0u8; 4 + 10];
        Repr::collect(1, 1).emit(&mut Packet::new_unchecked(&mut buf[..]));
        buf[3] = 0;
        assert_eq!(Packet::new_checked(&buf[..]).unwrap().units(), 1);
    }

    #[test]
    fn switches_fill_free_slots_in_order_count_the_rest_and_never_touch_an_echo() {
        let mut buf = [0u8; 4 + 2 * 10];
        Repr::collect(2, 1).emit(&mut Packet::new_unchecked(&mut buf[..]));
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        let hop = |t| HopRecord {
            ts_ns: t,
            ..HopRecord::default()
        };
        assert!(p.push_hop(&hop(1)));
        assert!(p.push_hop(&hop(2)));
        assert!(!p.push_hop(&hop(3)));
        assert!(!p.push_hop(&hop(4)));
        assert_eq!(
            (p.hop(0), p.hop(1), p.hop(2)),
            (Some(hop(1)), Some(hop(2)), None)
        );
        let r = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!((r.records(), r.dropped()), (&[hop(1), hop(2)][..], 2));
        let mut echo = [0u8; 4 + 10];
        Repr::echo_of(&[hop(9)], 1).emit(&mut Packet::new_unchecked(&mut echo[..]));
        let mut e = Packet::new_checked(&mut echo[..]).unwrap();
        assert!(!e.push_hop(&hop(4)));
        assert_eq!(e.hop_count(), 1);
    }
}
