//! Time series of a run: per-flow rate, queue depths of monitored switch ports, congestion
//! control state (rate, alpha) read through a probe, and PFC pause periods.
//!
//! Sampling is an event in the fabric's queue, so recording changes no outcome and stays
//! deterministic. A stretch where nothing moves and nothing changes is kept as one row and a
//! count ([`Row::repeats`]): a run's memory does not grow with its length once its flows are
//! done. Writing files is the CLI's job (`roce::report::sim`).

use serde::Serialize;

use super::flow_meter::FlowProgress;
use super::telemetry::Telemetry;
use crate::{HostId, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};

/// Congestion-control state of one flow at one host, as a probe reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CcSample {
    /// Which QP (or flow) on the host.
    pub qpn: u32,
    /// Current sending rate, Gbit/s.
    pub rate_gbps: f64,
    /// DCQCN's alpha (or the controller's nearest equivalent).
    pub alpha: f64,
}

impl CcSample {
    /// The sample of flow `qpn` whose controller reports `m`.
    pub fn of(qpn: u32, m: &roce_proto::cc::CcMetrics) -> Self {
        CcSample {
            qpn,
            rate_gbps: m.rate.as_gbps_f64(),
            alpha: m.alpha,
        }
    }
}

/// Reads congestion-control state out of an engine.
pub type CcProbe<E> = fn(&E, &mut Vec<CcSample>);

/// One sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Row {
    /// Virtual time, ns.
    pub t_ns: u64,
    /// Per registered flow: goodput over the last interval, Gbit/s. Flows after the last one
    /// that moved are left out (they moved nothing): before the first flow starts and after
    /// the last one ends a row holds none.
    pub flow_gbps: Vec<f64>,
    /// Per monitored port: bytes queued.
    pub queue_bytes: Vec<u64>,
    /// Probe output: (host index, sample).
    pub cc: Vec<(usize, CcSample)>,
    /// The same sample was taken this many more times, one interval apart after `t_ns` (an
    /// idle stretch: no flow moved, no queue or controller changed).
    #[serde(skip_serializing_if = "is_zero")]
    pub repeats: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Row {
    /// When the sample was taken (`t_ns`, as it is written out).
    pub fn at(&self) -> Instant {
        Instant::from_nanos(self.t_ns)
    }

    /// Whether `other` is this row's sample again: nothing moved in either, and the queues
    /// and controllers are as they were.
    fn same_idle(&self, other: &Row) -> bool {
        self.flow_gbps.is_empty()
            && other.flow_gbps.is_empty()
            && self.queue_bytes == other.queue_bytes
            && self.cc == other.cc
    }
}

/// A PFC frame a switch sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PauseMark {
    /// Virtual time, ns.
    pub t_ns: u64,
    /// Switch index.
    pub switch: usize,
    /// Port that sent it (upstream of the congestion).
    pub port: u16,
    /// Priority.
    pub prio: usize,
    /// XOFF (true) or XON (false).
    pub xoff: bool,
}

/// Collects time series while a fabric runs.
pub struct Recorder<E> {
    /// Sampling interval.
    pub interval: Duration,
    /// Monitored (switch, port) egress queues.
    pub monitors: Vec<(SwitchId, u16)>,
    probe: Option<(Vec<HostId>, CcProbe<E>)>,
    /// Samples.
    pub rows: Vec<Row>,
    /// PFC frames sent by switches.
    pub pauses: Vec<PauseMark>,
    /// Every port's and host's counters in bins, if asked for.
    pub telemetry: Option<Telemetry<E>>,
    last_bytes: Vec<u64>,
    scratch: Vec<CcSample>,
}

impl<E> Recorder<E> {
    /// When the sample after `row`'s last repeat is due.
    pub fn next_at(&self, row: &Row) -> Instant {
        self.last_at(row) + self.interval
    }

    /// When `row`'s last repeat was taken.
    pub fn last_at(&self, row: &Row) -> Instant {
        row.at() + self.interval.saturating_mul(row.repeats)
    }

    /// [`Recorder::last_at`] in the nanoseconds rows are written out in.
    pub fn last_ns(&self, row: &Row) -> u64 {
        self.last_at(row).as_nanos()
    }

    /// Samples taken: rows and their repeats.
    pub fn samples(&self) -> u64 {
        self.rows.iter().map(|r| r.repeats.saturating_add(1)).sum()
    }
}

impl<E: Engine> Recorder<E> {
    /// Samples every `interval` the flows and the `monitors` queues.
    pub fn new(interval: Duration, monitors: Vec<(SwitchId, u16)>) -> Self {
        Recorder {
            interval,
            monitors,
            probe: None,
            rows: Vec::new(),
            pauses: Vec::new(),
            telemetry: None,
            last_bytes: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Also samples congestion-control state of `hosts` through `probe`.
    pub fn with_probe(mut self, hosts: Vec<HostId>, probe: CcProbe<E>) -> Self {
        self.probe = Some((hosts, probe));
        self
    }

    /// Also keeps the telemetry of every port and host (see [`Telemetry`]).
    pub fn with_telemetry(mut self, telemetry: Telemetry<E>) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// Takes the sample of `now`: the flow meter's `progress` per flow, `queue_bytes(switch, port)`
    /// of the monitors and the probe's view of `engine(host)`.
    pub(crate) fn sample<'e>(
        &mut self,
        now: Instant,
        progress: &[FlowProgress],
        queue_bytes: impl Fn(SwitchId, u16) -> u64,
        engine: impl Fn(HostId) -> Option<&'e E>,
    ) where
        E: 'e,
    {
        let secs = self.interval.as_secs_f64().max(1e-12);
        self.last_bytes.resize(progress.len(), 0);
        let mut moved = 0;
        for (i, (p, last)) in progress.iter().zip(self.last_bytes.iter_mut()).enumerate() {
            if p.bytes() != *last {
                moved = i + 1;
            }
        }
        let flow_gbps = progress
            .iter()
            .zip(self.last_bytes.iter_mut())
            // The flows past `moved` have `last` equal to their bytes already.
            .take(moved)
            .map(|(p, last)| {
                let d = p.bytes() - (*last).min(p.bytes());
                *last = p.bytes();
                d as f64 * 8.0 / secs / 1e9
            })
            .collect();
        let queue_bytes = self
            .monitors
            .iter()
            .map(|&(s, p)| queue_bytes(s, p))
            .collect();
        let mut cc = Vec::new();
        if let Some((hosts, probe)) = &self.probe {
            for &h in hosts {
                if let Some(e) = engine(h) {
                    self.scratch.clear();
                    probe(e, &mut self.scratch);
                    cc.extend(self.scratch.iter().map(|s| (h.0, *s)));
                }
            }
        }
        let row = Row {
            t_ns: now.as_nanos(),
            flow_gbps,
            queue_bytes,
            cc,
            repeats: 0,
        };
        let due = self.rows.last().map(|last| self.next_at(last));
        match self.rows.last_mut() {
            Some(last) if last.same_idle(&row) && due == Some(now) => last.repeats += 1,
            _ => self.rows.push(row),
        }
    }

    /// Takes the last sample again `n` more times, one interval apart (the fabric has nothing
    /// left to do: nothing can move or change).
    pub(crate) fn repeat_last(&mut self, n: u64) {
        if let Some(last) = self.rows.last_mut() {
            last.repeats = last.repeats.saturating_add(n);
        }
    }

    pub(crate) fn on_pfc(&mut self, at: Instant, s: SwitchId, port: u16, prio: usize, xoff: bool) {
        self.pauses.push(PauseMark {
            t_ns: at.as_nanos(),
            switch: s.0,
            port,
            prio,
            xoff,
        });
    }

    /// Mean and 99th percentile of monitor `i`'s queue depth over samples taken at or after
    /// `from`.
    pub fn queue_stats(&self, i: usize, from: Instant) -> (f64, u64) {
        // (depth, samples at or after `from`) of each row.
        let mut v: Vec<(u64, u64)> = self
            .rows
            .iter()
            .filter(|r| self.last_at(r) >= from)
            .filter_map(|r| {
                let skipped = from.saturating_since(r.at()).div_ceil(self.interval);
                let n = r.repeats.saturating_add(1).saturating_sub(skipped);
                r.queue_bytes.get(i).map(|&q| (q, n))
            })
            .filter(|&(_, n)| n > 0)
            .collect();
        let n: u64 = v.iter().map(|&(_, c)| c).sum();
        if n == 0 {
            return (0.0, 0);
        }
        v.sort_unstable();
        let sum: u64 = v.iter().map(|&(q, c)| q.saturating_mul(c)).sum();
        let mean = sum as f64 / n as f64;
        let idx = ((n as f64 * 0.99).ceil() as u64).clamp(1, n) - 1;
        let mut seen = 0;
        let p99 = v
            .iter()
            .find(|&&(_, c)| {
                seen += c;
                seen > idx
            })
            .map_or(0, |&(q, _)| q);
        (mean, p99)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // Any engine will do: these tests feed samples, not frames.
    use roce_proto::endpoint::Endpoint;

    fn row(t_us: u64, queue: u64, repeats: u64) -> Row {
        Row {
            t_ns: t_us * 1000,
            queue_bytes: vec![queue],
            repeats,
            ..Row::default()
        }
    }

    #[test]
    fn repeated_rows_weigh_as_the_samples_they_stand_for() {
        let rec = |rows: Vec<Row>| {
            let mut r = Recorder::<Endpoint>::new(Duration::from_micros(1), Vec::new());
            r.rows = rows;
            r
        };
        // Samples every microsecond: 5000 B for 10 us, then 0 B for 990 us.
        let mut expanded: Vec<Row> = (1..=10).map(|t| row(t, 5000, 0)).collect();
        expanded.extend((11..=1000).map(|t| row(t, 0, 0)));
        let mut compressed: Vec<Row> = (1..=10).map(|t| row(t, 5000, 0)).collect();
        compressed.push(row(11, 0, 989));
        let (a, b) = (rec(expanded), rec(compressed));
        assert_eq!(b.samples(), 1000);
        assert_eq!(b.last_ns(&b.rows[10]), 1_000_000);
        for from_us in [0, 5, 10, 11, 12, 500, 999, 1000, 1001] {
            let from = Instant::ZERO + Duration::from_micros(from_us);
            assert_eq!(
                a.queue_stats(0, from),
                b.queue_stats(0, from),
                "from {from_us} us"
            );
        }
        assert_eq!(b.queue_stats(0, Instant::ZERO), (50.0, 0));
        let late = Instant::ZERO + Duration::from_micros(995);
        assert_eq!(b.queue_stats(0, late), (0.0, 0));
    }
}
