//! A QP's congestion controller and the pacer that follows its rate, owned by the QP (statically
//! dispatched: the [`Controller`] enum is the one dispatch over the algorithms). Every data
//! packet sent is charged to both; CNPs, ACK RTT samples, losses, echoed INT and the controller's
//! timers change the rate, and the pacer turns the rate into the earliest departure of the next
//! packet; a controller that runs a window also bounds the bytes in flight.
//!
//! The algorithms live in [`crate::cc`]; this is only the glue to the QP scheduler.

use crate::cc::pacer::Pacer;
use crate::cc::{CcMetrics, CongestionControl, Controller, IntAck, IntHop};
use crate::time::{Duration, Instant};

/// A controller driving a token-bucket pacer.
#[derive(Debug)]
pub struct CcPacer {
    cc: Controller,
    pacer: Pacer,
}

impl CcPacer {
    /// Paces at `cc`'s rate with `burst_bytes` of burst allowance.
    pub fn new(cc: Controller, burst_bytes: u64) -> Self {
        let pacer = Pacer::new(cc.rate(), burst_bytes);
        CcPacer { cc, pacer }
    }

    /// The controller (for its metrics).
    pub fn controller(&self) -> &Controller {
        &self.cc
    }

    #[inline]
    fn follow_rate(&mut self, now: Instant) {
        self.pacer.set_rate_draining(now, self.cc.rate());
    }

    /// A paced (data) frame of `frame_len` bytes left at `now`; returns when the next may leave.
    #[inline]
    pub fn on_transmit(&mut self, now: Instant, frame_len: usize) -> Instant {
        let len = frame_len as u64;
        self.cc.on_sent(now, len);
        self.pacer.on_sent(now, len);
        self.follow_rate(now);
        self.pacer.earliest_departure(now, len)
    }

    /// When the next paced frame may leave, at the rate as it is now.
    pub fn departure(&self, now: Instant) -> Instant {
        self.pacer.earliest_departure(now, 0)
    }

    /// A CNP arrived for this QP.
    pub fn on_cnp(&mut self, now: Instant) {
        self.cc.on_cnp(now);
        self.follow_rate(now);
    }

    /// The QP's path MTU is `mtu` (at installation and whenever it changes). Told outside
    /// the data path, without a time: the pacer follows any change of rate at the next input.
    pub fn on_path_mtu(&mut self, mtu: u32) {
        self.cc.on_path_mtu(mtu);
    }

    /// The controller's own next deadline (rate-increase timers).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.cc.poll_timeout()
    }

    /// The controller's deadline has come.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.cc.handle_timeout(now);
        self.follow_rate(now);
    }

    /// A response acknowledged `acked_bytes` more request bytes; `rtt` is its sample.
    pub fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Option<Duration>) {
        self.cc.on_ack(now, acked_bytes, rtt);
        self.follow_rate(now);
    }

    /// The transport detected a loss (NAK sequence error or ACK timeout).
    pub fn on_loss(&mut self, now: Instant) {
        self.cc.on_loss(now);
        self.follow_rate(now);
    }

    /// In-band telemetry echoed by the peer arrived (one record per hop) on an ACK that left
    /// the sequence at `ack`.
    pub fn on_int(&mut self, now: Instant, hops: &[IntHop], ack: IntAck) {
        self.cc.on_int(now, hops, Some(ack));
        self.follow_rate(now);
    }

    /// The controller's send window in bytes, if it runs one: new data waits while this
    /// many bytes are in flight (the HPCC authors' ns-3 `IsWinBound`).
    #[inline]
    pub fn window(&self) -> Option<u64> {
        self.cc.window()
    }

    /// Whether every data packet asks for its ACK: the controller wants an RTT sample per
    /// packet, or runs a window (which coalesced ACKs would hold shut; the controller's
    /// `ack_each` says so too).
    #[inline]
    pub fn ack_each(&self) -> bool {
        self.cc.ack_each()
    }

    /// The controller's state and counters.
    pub fn metrics(&self) -> CcMetrics {
        self.cc.metrics()
    }
}
