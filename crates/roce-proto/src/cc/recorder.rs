//! A time series of a controller's state for experiment tools: [`Recorder`] wraps any
//! [`CongestionControl`] and keeps a [`Sample`] whenever rate, target or alpha change, and at
//! every congestion signal. Export as CSV ([`to_csv`]) or JSON (the samples are `Serialize`).
//! Recording costs a metrics comparison per input; leave it out of production data paths.

use core::fmt::Write as _;

use super::{CcMetrics, CongestionControl, IntHop, Rate};
use crate::time::{Duration, Instant};

/// What input produced a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CcEvent {
    /// The recording started.
    Start,
    /// A packet was sent (byte-counter events).
    Sent,
    /// An ACK arrived.
    Ack,
    /// A CNP arrived.
    Cnp,
    /// A loss was reported.
    Loss,
    /// INT telemetry arrived.
    Int,
    /// A timer fired.
    Timer,
}

impl CcEvent {
    /// The lowercase name used in CSV and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CcEvent::Start => "start",
            CcEvent::Sent => "sent",
            CcEvent::Ack => "ack",
            CcEvent::Cnp => "cnp",
            CcEvent::Loss => "loss",
            CcEvent::Int => "int",
            CcEvent::Timer => "timer",
        }
    }
}

/// One point of the time series.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Sample {
    /// When, in ns of the driver's clock.
    pub t_ns: u64,
    /// The current rate, bits/s.
    pub rate_bps: u64,
    /// The target rate, bits/s.
    pub target_bps: u64,
    /// The congestion estimate.
    pub alpha: f64,
    /// The input that produced it.
    pub event: CcEvent,
}

impl Sample {
    fn new(now: Instant, m: &CcMetrics, event: CcEvent) -> Self {
        Sample {
            t_ns: now.as_nanos(),
            rate_bps: m.rate.as_bps(),
            target_bps: m.target_rate.as_bps(),
            alpha: m.alpha,
            event,
        }
    }
}

/// Samples as CSV with a header line `t_ns,rate_bps,target_bps,alpha,event`.
pub fn to_csv(samples: &[Sample]) -> String {
    let mut out = String::from("t_ns,rate_bps,target_bps,alpha,event\n");
    for s in samples {
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            s.t_ns,
            s.rate_bps,
            s.target_bps,
            s.alpha,
            s.event.as_str()
        );
    }
    out
}

/// A controller whose state changes are recorded.
#[derive(Debug)]
pub struct Recorder<C> {
    inner: C,
    samples: Vec<Sample>,
}

impl<C: CongestionControl> Recorder<C> {
    /// Starts recording `inner` at `now` with one [`CcEvent::Start`] sample.
    pub fn new(inner: C, now: Instant) -> Self {
        let first = Sample::new(now, &inner.metrics(), CcEvent::Start);
        Recorder {
            inner,
            samples: vec![first],
        }
    }

    /// The samples so far.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// The wrapped controller.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// Ends the recording.
    pub fn into_parts(self) -> (C, Vec<Sample>) {
        (self.inner, self.samples)
    }

    fn note(&mut self, now: Instant, event: CcEvent) {
        let m = self.inner.metrics();
        let changed = self.samples.last().is_none_or(|last| {
            last.rate_bps != m.rate.as_bps()
                || last.target_bps != m.target_rate.as_bps()
                || last.alpha != m.alpha
        });
        if changed || matches!(event, CcEvent::Cnp | CcEvent::Loss) {
            self.samples.push(Sample::new(now, &m, event));
        }
    }
}

impl<C: CongestionControl> CongestionControl for Recorder<C> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn on_sent(&mut self, now: Instant, bytes: u64) {
        self.inner.on_sent(now, bytes);
        self.note(now, CcEvent::Sent);
    }
    fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Option<Duration>) {
        self.inner.on_ack(now, acked_bytes, rtt);
        self.note(now, CcEvent::Ack);
    }
    fn on_cnp(&mut self, now: Instant) {
        self.inner.on_cnp(now);
        self.note(now, CcEvent::Cnp);
    }
    fn on_loss(&mut self, now: Instant) {
        self.inner.on_loss(now);
        self.note(now, CcEvent::Loss);
    }
    fn on_int(&mut self, now: Instant, hops: &[IntHop], ack: Option<super::IntAck>) {
        self.inner.on_int(now, hops, ack);
        self.note(now, CcEvent::Int);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
        self.note(now, CcEvent::Timer);
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }
    fn rate(&self) -> Rate {
        self.inner.rate()
    }
    fn metrics(&self) -> CcMetrics {
        self.inner.metrics()
    }
}
