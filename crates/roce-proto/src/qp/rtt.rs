//! RTT samples for a QP's congestion control, the way a NIC takes them: the transmit timestamp of
//! every first-time request packet that asks for an ACK (AckReq) goes into a bounded ring; the
//! response that covers its PSN gives `now − sent` and the bytes acknowledged since the last one.
//!
//! Not here: what a controller does with the samples ([`crate::cc`]). The ring allocates as it
//! first fills (up to [`RTT_RING`] stamps), not when the QP is made; Karn's rule (retransmitted packets are never timed, a loss forgets every pending
//! timestamp) keeps retransmission delays out of the samples.

use std::collections::VecDeque;

use crate::psn::Psn;
use crate::time::{Duration, Instant};

/// Timestamps remembered per QP; when the ring is full, new requests go untimed until an ACK
/// frees a slot.
pub const RTT_RING: usize = 64;

#[derive(Clone, Copy, Debug, Default)]
struct Stamp {
    psn: Psn,
    sent: Instant,
    /// Request bytes (whole frames) sent up to and including this packet.
    bytes_through: u64,
}

/// One measurement, handed to [`crate::cc::CongestionControl::on_ack`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSample {
    /// Request bytes newly acknowledged (since the previous sample).
    pub acked_bytes: u64,
    /// `now` minus the transmit time of the newest timed packet the response covers.
    pub rtt: Duration,
}

/// The per-QP ring of transmit timestamps: empty and unallocated until the QP times its first
/// request (a receiving QP never does), then growing to at most [`RTT_RING`] stamps.
#[derive(Clone, Debug, Default)]
pub struct RttSampler {
    ring: VecDeque<Stamp>,
    bytes_sent: u64,
    bytes_acked: u64,
}

impl RttSampler {
    /// A request packet of `frame_len` bytes with PSN `psn` left at `now`. Only first
    /// transmissions that request an ACK are timed.
    #[inline]
    pub fn on_request_sent(
        &mut self,
        now: Instant,
        psn: Psn,
        ack_req: bool,
        retransmission: bool,
        frame_len: usize,
    ) {
        if retransmission {
            return;
        }
        self.bytes_sent += frame_len as u64;
        if !ack_req || self.ring.len() == RTT_RING {
            return;
        }
        self.ring.push_back(Stamp {
            psn,
            sent: now,
            bytes_through: self.bytes_sent,
        });
    }

    /// A response acknowledged every PSN up to and including `psn` at `now`. Returns a sample
    /// when it covers at least one timed packet (the newest of them sets the RTT).
    #[must_use]
    pub fn on_response(&mut self, now: Instant, psn: Psn) -> Option<AckSample> {
        let mut newest: Option<Stamp> = None;
        while let Some(&s) = self.ring.front() {
            if s.psn.after(psn) {
                break;
            }
            newest = Some(s);
            self.ring.pop_front();
        }
        let s = newest?;
        let acked_bytes = s.bytes_through.saturating_sub(self.bytes_acked);
        self.bytes_acked = self.bytes_acked.max(s.bytes_through);
        Some(AckSample {
            acked_bytes,
            rtt: now.saturating_since(s.sent),
        })
    }

    /// A loss was detected: forget every pending timestamp (their responses will come after a
    /// retransmission and would measure it).
    pub fn on_loss(&mut self) {
        self.ring.clear();
        self.bytes_acked = self.bytes_sent;
    }

    /// Stamps the ring has room for without allocating (0 until the first is timed).
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Timed packets waiting for their response.
    pub fn pending(&self) -> usize {
        self.ring.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    #[test]
    fn cumulative_ack_times_the_newest_covered_request_and_counts_bytes() {
        let mut r = RttSampler::default();
        r.on_request_sent(t(100), Psn::new(1), true, false, 1000);
        r.on_request_sent(t(200), Psn::new(2), false, false, 1000);
        r.on_request_sent(t(300), Psn::new(3), true, false, 1000);
        r.on_request_sent(t(400), Psn::new(4), true, false, 500);
        let s = r.on_response(t(1300), Psn::new(3)).unwrap();
        assert_eq!(s.rtt, Duration::from_nanos(1000));
        assert_eq!(s.acked_bytes, 3000);
        assert_eq!(r.on_response(t(1350), Psn::new(3)), None);
        let s = r.on_response(t(1400), Psn::new(4)).unwrap();
        assert_eq!((s.rtt, s.acked_bytes), (Duration::from_nanos(1000), 500));
    }

    #[test]
    fn retransmissions_are_never_timed_and_loss_forgets_pending_stamps() {
        let mut r = RttSampler::default();
        r.on_request_sent(t(0), Psn::new(7), true, false, 100);
        r.on_loss();
        r.on_request_sent(t(50), Psn::new(7), true, true, 100);
        assert_eq!(r.pending(), 0);
        assert_eq!(r.on_response(t(90), Psn::new(7)), None);
    }

    #[test]
    fn a_full_ring_leaves_new_requests_untimed_and_psns_wrap() {
        let mut r = RttSampler::default();
        let base = Psn::new(0xff_fff0);
        for i in 0..(RTT_RING as u32 + 5) {
            r.on_request_sent(t(u64::from(i)), base.add(i), true, false, 10);
        }
        assert_eq!(r.pending(), RTT_RING);
        let s = r
            .on_response(t(1000), base.add(RTT_RING as u32 + 4))
            .unwrap();
        assert_eq!(s.rtt, Duration::from_nanos(1000 - (RTT_RING as u64 - 1)));
        assert_eq!(r.pending(), 0);
    }
}
