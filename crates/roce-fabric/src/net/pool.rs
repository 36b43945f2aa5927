//! The packet pool: every frame in flight or queued, by index, with what the fabric read from it
//! once when it entered. A hop reads only a slot's first cache line; frame bytes are read by hosts,
//! captures and INT switches, and a zero payload is not stored at all.

use std::num::NonZeroU32;

use prefetch_index::prefetch_index;

use crate::switching::frame::{bth_info, BthInfo, IpInfo};
use crate::switching::switch::Arrival;
use crate::PktId;
use roce_proto::cc::IntHop;
use roce_proto::time::Instant;
use roce_proto::wire::int::{self, HopRecord};
use roce_proto::wire::udp;

/// A frame and what the fabric read from it once, when it entered the fabric.
///
/// The first cache line holds everything a hop reads (receive, route, admit, mark, transmit):
/// `repr(C)` keeps the fields in this order and the slot is line-aligned. The frame's bytes, its
/// BTH fields and INT records follow.
#[repr(C, align(64))]
#[derive(Clone, Debug, Default)]
pub(super) struct Slot {
    /// IP fields, if the frame carries IPv4 or IPv6.
    pub(super) ip: Option<IpInfo>,
    /// Ethertype after any VLAN tag.
    pub(super) ethertype: u16,
    pub(super) prio: u8,
    pub(super) fcs_bad: bool,
    /// The host its IP destination belongs to, plus one, resolved once by the sending host
    /// (switches route on it at every hop; no switch rewrites the destination).
    dst_host: Option<NonZeroU32>,
    /// The frame's length (on the wire, without FCS).
    len: u32,
    /// The epoch of the link it was sent on (see [`crate::net::transit::Link::epoch`]), set only when
    /// the frame leaves the partition (a local delivery carries it in its event).
    pub(super) epoch: u32,
    /// The frame's bytes; compact (shorter than `len`) when its zero payload is left out: the
    /// first [`Slot::KEEP`] bytes, then the last [`Slot::TAIL`] (see [`Slot::store`]).
    buf: Vec<u8>,
    /// The RoCE BTH fields the flow meter reads, if it is a RoCEv2 frame (read once here: no
    /// switch changes them, and a corrupted frame never reaches the flow meter).
    pub(super) bth: Option<BthInfo>,
    /// INT hops stamped by switches with `int` on (empty otherwise; reused, no allocation).
    pub(super) int: Vec<IntHop>,
    /// On a data frame, when a switch marked it CE; on a CNP, when the mark it answers was
    /// made (set as the notification point's host sends it). The CNP delay runs from here
    /// ([`crate::record::cnp_delay`]).
    pub(super) ce_at: Option<Instant>,
}

impl Slot {
    /// Leading bytes a compact frame keeps: every header a switch or host reads or writes in
    /// flight (Ethernet, VLAN, IPv4/IPv6, UDP, BTH and its extension headers) lies within them.
    const KEEP: usize = 128;
    /// Bytes kept at the end of a compact frame: its ICRC.
    const TAIL: usize = 4;
    /// The fewest zero bytes worth leaving out.
    const MIN_ZEROS: usize = 64;

    /// Stores `frame` and reads its headers.
    fn fill(&mut self, frame: &[u8]) {
        self.store(frame);
        let a = Arrival::of(frame);
        self.ip = a.info.ip;
        self.ethertype = a.info.ethertype;
        self.prio = a.prio as u8;
        self.fcs_bad = false;
        self.dst_host = None;
        self.bth = a.info.ip.as_ref().and_then(|ip| bth_info(frame, ip));
        self.int.clear();
        self.ce_at = None;
    }

    /// Stores `frame`'s bytes. A frame whose bytes between the first [`Slot::KEEP`] and the
    /// last [`Slot::TAIL`] are all zero (the payload of a flow whose data nobody verifies) is
    /// stored without them: a kilobyte copied into a cold buffer and read back at the far end
    /// was most of what a frame cost the cache.
    fn store(&mut self, frame: &[u8]) {
        self.buf.clear();
        self.len = frame.len() as u32;
        let gap = frame.len().saturating_sub(Self::KEEP + Self::TAIL);
        match frame.split_at_checked(Self::KEEP) {
            Some((head, rest)) if gap >= Self::MIN_ZEROS && all_zero(&rest[..gap]) => {
                // One allocation for a slot whose buffer went to another partition.
                self.buf.reserve(Self::KEEP + Self::TAIL);
                self.buf.extend_from_slice(head);
                self.buf.extend_from_slice(&rest[gap..]);
            }
            _ => self.buf.extend_from_slice(frame),
        }
    }

    fn compact(&self) -> bool {
        self.buf.len() < self.len as usize
    }

    /// The frame's length on the wire (without FCS).
    pub(super) fn wire_len(&self) -> usize {
        self.len as usize
    }

    /// The host the frame is for, if its destination address is a host's.
    pub(super) fn dst_host(&self) -> Option<usize> {
        self.dst_host.map(|h| h.get() as usize - 1)
    }

    pub(super) fn set_dst_host(&mut self, host: Option<usize>) {
        self.dst_host = host.and_then(|h| NonZeroU32::new(u32::try_from(h).ok()?.checked_add(1)?));
    }

    /// How many stored bytes [`Slot::head`] gives: all of them unless the frame is compact.
    fn head_len(&self) -> usize {
        match self.compact() {
            false => self.buf.len(),
            true => Self::KEEP.min(self.buf.len()),
        }
    }

    /// The frame's leading bytes, which hold its headers: the whole frame unless compact.
    pub(super) fn head(&self) -> &[u8] {
        self.buf.get(..self.head_len()).unwrap_or_default()
    }

    /// [`Slot::head`] and the IP fields read from it, to change both in place (ECN).
    pub(super) fn head_and_ip(&mut self) -> (&mut [u8], Option<&mut IpInfo>) {
        let n = self.head_len();
        (self.buf.get_mut(..n).unwrap_or_default(), self.ip.as_mut())
    }

    /// The whole frame: the stored bytes, or a compact frame written out into `out`.
    pub(super) fn frame<'a>(&'a self, out: &'a mut Vec<u8>) -> &'a [u8] {
        if !self.compact() {
            return &self.buf;
        }
        let (head, tail) = self.buf.split_at(self.head_len());
        out.clear();
        out.extend_from_slice(head);
        out.resize(self.wire_len() - tail.len(), 0);
        out.extend_from_slice(tail);
        out
    }

    /// Changes the frame's bytes with `edit`, storing them in full from now on (it may reach
    /// the bytes a compact frame leaves out, or change the length).
    pub(super) fn edit<R>(&mut self, edit: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        if self.compact() {
            let at = self.head_len();
            let zeros = std::iter::repeat_n(0, self.wire_len() - self.buf.len());
            self.buf.splice(at..at, zeros);
        }
        let r = edit(&mut self.buf);
        self.len = self.buf.len() as u32;
        r
    }

    /// What an INT switch does to a frame with a shim (one to the INT UDP port): writes `rec`
    /// into the shim's next free slot. Returns whether the frame has a shim at all (an echo or
    /// a full shim takes no record, but the frame carries its telemetry in band). The shim
    /// lies in the stored head of a compact frame, which stays compact.
    pub(super) fn push_int_hop(&mut self, rec: &HopRecord) -> bool {
        let Some(ip) = self
            .ip
            .filter(|ip| ip.dport == int::INT_UDP_PORT && ip.l4 > 0)
        else {
            return false;
        };
        let at = usize::from(ip.l4) + udp::HEADER_LEN;
        let head = self.head_len();
        if let Some(Ok(mut shim)) = self.buf.get_mut(at..head).map(int::Packet::new_checked) {
            shim.push_hop(rec);
            return true;
        }
        // A shim reaching past the stored head (or one that does not parse): the whole frame.
        self.edit(|b| {
            let shim = int::shim_offset(b).is_some();
            if shim {
                int::push_hop(b, rec);
            }
            shim
        })
    }
}

/// Whether every byte of `b` is zero (in 64-byte strides the compiler vectorises).
fn all_zero(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(64);
    let wide = chunks.all(|c| c.iter().fold(0, |acc, &x| acc | x) == 0);
    wide && chunks.remainder().iter().all(|&x| x == 0)
}

/// Frames in flight or queued, by index; buffers are reused.
#[derive(Clone, Debug, Default)]
pub(super) struct PacketPool {
    pub(super) slots: Vec<Slot>,
    pub(super) free: Vec<PktId>,
}

impl PacketPool {
    pub(super) fn alloc(&mut self, data: &[u8]) -> PktId {
        let id = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::default());
            (self.slots.len() - 1) as PktId
        });
        if let Some(s) = self.slots.get_mut(id as usize) {
            s.fill(data);
        }
        id
    }
    /// Prefetches slot `id`'s first two cache lines: what a hop reads, and where the frame's
    /// bytes are. A hint; a bad id is ignored.
    pub(super) fn prefetch_slot(&self, id: PktId) {
        if let Some(s) = self.slot(id) {
            prefetch_index(std::slice::from_ref(s), 0);
            prefetch_index(std::slice::from_ref(&s.buf), 0);
        }
    }
    /// Prefetches the stored bytes of frame `id` (reading where they are from its slot).
    pub(super) fn prefetch_bytes(&self, id: PktId) {
        let Some(buf) = self.slot(id).map(|s| &s.buf) else {
            return;
        };
        for at in (0..buf.len()).step_by(64).chain(buf.len().checked_sub(1)) {
            prefetch_index(buf, at);
        }
    }
    pub(super) fn slot(&self, id: PktId) -> Option<&Slot> {
        self.slots.get(id as usize)
    }
    pub(super) fn prio(&self, id: PktId) -> usize {
        self.slot(id).map_or(0, |s| usize::from(s.prio))
    }
    pub(super) fn release(&mut self, id: PktId) {
        self.free.push(id);
    }
    pub(super) fn slot_mut(&mut self, id: PktId) -> Option<&mut Slot> {
        self.slots.get_mut(id as usize)
    }
    pub(super) fn len(&self, id: PktId) -> u64 {
        self.slot(id).map_or(0, |s| s.wire_len() as u64)
    }
    /// Takes the frame out of the pool (it moves to another partition's pool).
    pub(super) fn take(&mut self, id: PktId) -> Slot {
        let slot = self.slot_mut(id).map(std::mem::take).unwrap_or_default();
        self.release(id);
        slot
    }
    /// Puts a frame from another partition's pool into this one.
    pub(super) fn adopt(&mut self, slot: Slot) -> PktId {
        match self.free.pop() {
            Some(id) => {
                if let Some(s) = self.slot_mut(id) {
                    *s = slot;
                }
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as PktId
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(zeros: usize, tail: [u8; 4]) -> Vec<u8> {
        let mut f: Vec<u8> = (1..=Slot::KEEP as u8).collect();
        f.extend(std::iter::repeat_n(0, zeros));
        f.extend(tail);
        f
    }

    #[test]
    fn a_hop_reads_one_cache_line() {
        assert_eq!(std::mem::size_of::<IpInfo>(), 48);
        assert_eq!(std::mem::size_of::<Option<IpInfo>>(), 48);
        assert_eq!(std::mem::offset_of!(Slot, buf), 64);
        assert_eq!(std::mem::align_of::<Slot>(), 64);
        assert_eq!(std::mem::size_of::<Slot>(), 192);
    }

    #[test]
    fn a_zero_payload_is_left_out_and_written_back_whole() {
        let f = frame(900, [9, 8, 7, 6]);
        let mut s = Slot::default();
        s.store(&f);
        assert_eq!((s.buf.len(), s.wire_len()), (132, f.len()));
        assert_eq!(s.head(), &f[..Slot::KEEP]);
        let mut out = Vec::new();
        assert_eq!(s.frame(&mut out), &f[..]);
        // An edit sees the whole frame and stores it in full; a longer frame is measured again.
        s.edit(|b| {
            assert_eq!(&b[..], &f[..]);
            b.push(5);
        });
        assert_eq!((s.wire_len(), s.head().len()), (f.len() + 1, f.len() + 1));
        assert_eq!(&s.head()[..f.len()], &f[..]);
        // Reused for a frame that is not compact: nothing of the last one remains.
        let short = frame(Slot::MIN_ZEROS - 1, [1, 2, 3, 4]);
        s.store(&short);
        assert_eq!((s.head(), s.frame(&mut out)), (&short[..], &short[..]));
    }

    #[test]
    fn a_frame_with_any_byte_set_between_head_and_tail_is_kept_whole() {
        for at in [
            Slot::KEEP,
            Slot::KEEP + 63,
            Slot::KEEP + 64,
            Slot::KEEP + 899,
        ] {
            let mut f = frame(900, [0; 4]);
            f[at] = 1;
            let mut s = Slot::default();
            s.store(&f);
            assert_eq!(&s.buf[..], &f[..], "byte {at} set");
        }
        // All zero but for the head: the ICRC may be zero too.
        let mut s = Slot::default();
        s.store(&frame(64, [0; 4]));
        assert_eq!(
            (s.buf.len(), s.wire_len()),
            (Slot::KEEP + 4, Slot::KEEP + 68)
        );
    }

    /// A RoCEv2 WRITE of 1024 zero bytes with a five-slot INT shim, at units 4.
    fn int_frame() -> Vec<u8> {
        use roce_proto::psn::Psn;
        use roce_proto::wire::{
            bth, ethernet, Ecn, EtherType, EthernetAddress, ExtRepr, IpRepr, Opcode, RoceRepr,
        };
        let repr = RoceRepr {
            eth: ethernet::Repr {
                dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
                src: EthernetAddress([2, 0, 0, 0, 0, 1]),
                vlan: None,
                ethertype: EtherType::Ipv4,
            },
            ip: IpRepr::new_roce(
                "10.0.0.1".parse().unwrap(),
                "10.0.0.2".parse().unwrap(),
                26,
                Ecn::Ect0,
            ),
            udp_src_port: 0xc123,
            bth: bth::Repr {
                opcode: Opcode::RC_RDMA_WRITE_MIDDLE,
                dest_qpn: 17,
                psn: Psn::new(5),
                pkey: 0xffff,
                ..bth::Repr::default()
            },
            ext: ExtRepr::default(),
            payload_len: 1024,
        };
        let mut buf = vec![0u8; repr.frame_len() + int::shim_len(5)];
        let n = repr.emit(&[0u8; 1024], &mut buf).unwrap();
        let n = int::insert(&mut buf, n, &int::Repr::collect(5, 4)).unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn an_int_switch_writes_into_a_compact_frames_head_which_stays_compact() {
        let f = int_frame();
        let mut s = Slot::default();
        s.fill(&f);
        assert!(s.compact());
        let rec = |t| HopRecord {
            ts_ns: t,
            tx_bytes: 512 * t,
            qlen_bytes: 320,
            rate_bps: 100_000_000_000,
        };
        for t in 1..=6 {
            assert!(s.push_int_hop(&rec(t)));
        }
        assert!(
            s.compact(),
            "the shim lies in the head: nothing is written out"
        );
        let mut out = Vec::new();
        let whole = s.frame(&mut out).to_vec();
        assert_eq!(whole.len(), f.len());
        let at = int::shim_offset(&whole).unwrap();
        let shim = int::Repr::parse(&int::Packet::new_checked(&whole[at..]).unwrap()).unwrap();
        assert_eq!(shim.records(), &[rec(1), rec(2), rec(3), rec(4), rec(5)]);
        assert_eq!(shim.dropped(), 1);
        // A frame to another port holds no shim.
        let mut plain = Slot::default();
        plain.fill(&f[..20]);
        assert!(!plain.push_int_hop(&rec(1)));
    }

    #[test]
    fn the_destination_host_round_trips() {
        let mut s = Slot::default();
        assert_eq!(s.dst_host(), None);
        for h in [0, 1, 319, u32::MAX as usize - 1] {
            s.set_dst_host(Some(h));
            assert_eq!(s.dst_host(), Some(h));
        }
        s.set_dst_host(Some(u32::MAX as usize));
        assert_eq!(s.dst_host(), None);
        s.set_dst_host(None);
        assert_eq!(s.dst_host(), None);
    }
}
