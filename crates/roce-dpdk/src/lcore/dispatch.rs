//! Which shard a frame belongs to, and the port wrapper that gets it there: each shard's
//! [`ShardPort`] receives from its own RX queue, keeps the frames its QPs own and hands the
//! others to their owner's inbox (a lock-free [`ArrayQueue`]); it also drains its own inbox. When
//! the device steers frames itself (flow rules, or a ring pair whose queue `i` only carries the
//! traffic of shard `i`) the inboxes stay empty; when it cannot, this is the software dispatcher.
//!
//! Ownership is by destination QPN: shard `s` numbers its QPs from [`first_qpn`]`(s)`, so the
//! number says the shard. Frames that are not RoCEv2 (ARP, NDP) belong to shard 0, the shard
//! that answers the neighbour protocols.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam::queue::ArrayQueue;
use roce_proto::port::{FrameBuf, Port};
use roce_proto::wire::parse_view_unverified;

/// Bits of a QPN below the shard number: shard `s` owns QPNs `s << QPN_SHARD_SHIFT ..`.
pub const QPN_SHARD_SHIFT: u32 = 16;
/// Most shards one port can have (QPNs are 24 bits).
pub const MAX_SHARDS: usize = 1 << (24 - QPN_SHARD_SHIFT);
/// Most QPs one shard can number without running into the next shard's range.
pub const MAX_QPS_PER_SHARD: usize =
    (1 << QPN_SHARD_SHIFT) - roce_proto::endpoint::FIRST_QPN as usize;

/// The first QPN of shard `shard`'s endpoint (shard 0 keeps the usual 17).
pub fn first_qpn(shard: usize) -> u32 {
    match shard {
        0 => roce_proto::endpoint::FIRST_QPN,
        s => (s as u32) << QPN_SHARD_SHIFT,
    }
}

/// `cfg` for the endpoint of shard `shard`: its QPs numbered in the shard's own range.
pub fn shard_config(
    mut cfg: roce_proto::endpoint::EndpointConfig,
    shard: usize,
) -> roce_proto::endpoint::EndpointConfig {
    cfg.first_qpn = first_qpn(shard);
    cfg.max_qps = cfg.max_qps.min(MAX_QPS_PER_SHARD);
    cfg
}

/// The shard that owns QPN `qpn` among `shards`.
pub fn shard_of_qpn(qpn: u32, shards: usize) -> usize {
    let s = (qpn >> QPN_SHARD_SHIFT) as usize;
    if s < shards {
        s
    } else {
        0
    }
}

/// Byte offsets of an untagged IPv4 RoCEv2 frame with a 20-byte IP header.
const ETHERTYPE: usize = 12;
const IP_VHL: usize = 14;
const IP_PROTO: usize = 23;
const UDP_DST: usize = 36;
const BTH_DEST_QPN: usize = 42 + 5;

/// The shard among `shards` that owns `frame`: the one numbering its destination QPN, or 0 for
/// anything that is not RoCEv2. The common shape (untagged IPv4 without options) is read at
/// fixed offsets; others go through the header parser (without the ICRC, which the owner checks).
pub fn owner_of(frame: &[u8], shards: usize) -> usize {
    if shards <= 1 {
        return 0;
    }
    let plain = frame.get(ETHERTYPE..ETHERTYPE + 2) == Some(&[0x08, 0x00])
        && frame.get(IP_VHL) == Some(&0x45)
        && frame.get(IP_PROTO) == Some(&17);
    if plain {
        if frame.get(UDP_DST..UDP_DST + 2) != Some(&[0x12, 0xb7]) {
            return 0;
        }
        return match frame.get(BTH_DEST_QPN..BTH_DEST_QPN + 3) {
            Some(&[a, b, c]) => shard_of_qpn(u32::from_be_bytes([0, a, b, c]), shards),
            _ => 0,
        };
    }
    match parse_view_unverified(frame) {
        Ok(view) => shard_of_qpn(view.bth.dest_qpn, shards),
        Err(_) => 0,
    }
}

/// What the dispatcher of one shard did.
#[derive(Debug, Default)]
pub struct DispatchCounters {
    /// Frames received on this shard's queue that another shard owns (handed over).
    pub forwarded: AtomicU64,
    /// Frames taken from this shard's inbox (received by another shard's queue).
    pub delivered: AtomicU64,
    /// Frames dropped because their owner's inbox was full.
    pub inbox_full: AtomicU64,
}

impl DispatchCounters {
    fn add(c: &AtomicU64, n: u64) {
        // One writer (the shard); a relaxed load-store pair is enough and costs no locked op.
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }
}

/// The inboxes of every shard of one port, shared by their [`ShardPort`]s.
pub type Inboxes<B> = Arc<[ArrayQueue<B>]>;

/// One inbox per shard, each holding up to `capacity` frames.
pub fn inboxes<B>(shards: usize, capacity: usize) -> Inboxes<B> {
    (0..shards.max(1))
        .map(|_| ArrayQueue::new(capacity.max(1)))
        .collect::<Vec<_>>()
        .into()
}

/// Frames one shard's inbox holds by default (beyond them, forwarded frames are dropped).
pub const INBOX_FRAMES: usize = 4096;

/// One [`ShardPort`] per queue of `queues` (queue handles of one device, queue `i` for shard
/// `i`), sharing fresh inboxes of `capacity` frames.
pub fn shard_ports<P: Port>(queues: Vec<P>, capacity: usize) -> Vec<ShardPort<P>> {
    let boxes = inboxes(queues.len(), capacity);
    queues
        .into_iter()
        .enumerate()
        .map(|(i, q)| ShardPort::new(q, i, boxes.clone()))
        .collect()
}

/// A shard's port: its own queue pair of the device plus the dispatcher (see the module docs).
#[derive(Debug)]
pub struct ShardPort<P: Port> {
    port: P,
    shard: usize,
    inboxes: Inboxes<P::Buf>,
    counters: Arc<DispatchCounters>,
    scratch: Vec<P::Buf>,
}

impl<P: Port> ShardPort<P> {
    /// Shard `shard`'s port over `port` (its own queue), sharing `inboxes` with the other shards.
    pub fn new(port: P, shard: usize, inboxes: Inboxes<P::Buf>) -> Self {
        ShardPort {
            port,
            shard,
            inboxes,
            counters: Arc::default(),
            scratch: Vec::new(),
        }
    }

    /// The shard number.
    pub fn shard(&self) -> usize {
        self.shard
    }

    /// The underlying queue.
    pub fn inner(&self) -> &P {
        &self.port
    }

    /// The dispatcher's counters (readable from any thread).
    pub fn counters(&self) -> Arc<DispatchCounters> {
        self.counters.clone()
    }
}

impl<P: Port> Port for ShardPort<P> {
    type Buf = P::Buf;
    roce_proto::port_caps_and_pool_of!(port);

    fn rx_burst(&mut self, out: &mut Vec<P::Buf>, max: usize) -> usize {
        let shards = self.inboxes.len();
        let before = out.len();
        // Frames other shards received for us first: they have waited longest.
        if let Some(inbox) = self.inboxes.get(self.shard) {
            let mut n = 0u64;
            while out.len() - before < max {
                match inbox.pop() {
                    Some(b) => {
                        out.push(b);
                        n += 1;
                    }
                    None => break,
                }
            }
            if n > 0 {
                DispatchCounters::add(&self.counters.delivered, n);
            }
        }
        let room = max - (out.len() - before);
        if room == 0 {
            return out.len() - before;
        }
        if shards <= 1 {
            self.port.rx_burst(out, room);
            return out.len() - before;
        }
        let got = self.port.rx_burst(&mut self.scratch, room);
        if got > 0 {
            let (mut forwarded, mut full) = (0u64, 0u64);
            for b in self.scratch.drain(..) {
                let owner = owner_of(b.frame(), shards);
                if owner == self.shard {
                    out.push(b);
                } else if let Some(inbox) = self.inboxes.get(owner) {
                    match inbox.push(b) {
                        Ok(()) => forwarded += 1,
                        // Dropped like a full RX ring would; the transport retransmits.
                        Err(_) => full += 1,
                    }
                }
            }
            if forwarded > 0 {
                DispatchCounters::add(&self.counters.forwarded, forwarded);
            }
            if full > 0 {
                DispatchCounters::add(&self.counters.inbox_full, full);
            }
        }
        out.len() - before
    }

    fn tx_burst(&mut self, bufs: &mut Vec<P::Buf>) -> usize {
        self.port.tx_burst(bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roce_frame(dest_qpn: u32) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[ETHERTYPE..ETHERTYPE + 2].copy_from_slice(&[0x08, 0x00]);
        f[IP_VHL] = 0x45;
        f[IP_PROTO] = 17;
        f[UDP_DST..UDP_DST + 2].copy_from_slice(&4791u16.to_be_bytes());
        f[BTH_DEST_QPN..BTH_DEST_QPN + 3].copy_from_slice(&dest_qpn.to_be_bytes()[1..]);
        f
    }

    #[test]
    fn shards_number_disjoint_qpn_ranges_and_frames_go_to_their_owner() {
        assert_eq!(first_qpn(0), 17);
        assert_eq!(first_qpn(3), 3 << 16);
        for s in 0..4 {
            let last = first_qpn(s) + MAX_QPS_PER_SHARD as u32 - 1;
            assert_eq!(shard_of_qpn(first_qpn(s), 4), s);
            assert_eq!(shard_of_qpn(last, 4), s);
            assert_eq!(owner_of(&roce_frame(first_qpn(s) + 5), 4), s);
        }
        // A QPN of a shard that does not exist, a non-RoCE frame, one shard: shard 0.
        assert_eq!(owner_of(&roce_frame(first_qpn(5)), 4), 0);
        let mut arp = roce_frame(first_qpn(2));
        arp[ETHERTYPE..ETHERTYPE + 2].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(owner_of(&arp, 4), 0);
        let mut other_udp = roce_frame(first_qpn(2));
        other_udp[UDP_DST + 1] = 0;
        assert_eq!(owner_of(&other_udp, 4), 0);
        assert_eq!(owner_of(&roce_frame(first_qpn(2)), 1), 0);
    }
}
