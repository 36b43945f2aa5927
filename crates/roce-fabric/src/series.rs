//! Time series of a run: per-flow rate, queue depths of monitored switch ports, congestion
//! control state (rate, alpha) read through a probe, and PFC pause periods.
//!
//! Sampling is an event in the fabric's queue, so recording changes no outcome and stays
//! deterministic. Writing files is the CLI's job (`roce::report::sim`).

use serde::Serialize;

use super::tap::FlowProgress;
use super::telemetry::Telemetry;
use super::{HostId, SwitchId};
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

    /// Takes the sample of `now`: the tap's `progress` per flow, `queue_bytes(switch, port)` of
    /// the monitors and the probe's view of `engine(host)`.
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
        self.rows.push(Row {
            t_ns: now.as_nanos(),
            flow_gbps,
            queue_bytes,
            cc,
        });
    }

    pub(crate) fn on_pfc(&mut self, t_ns: u64, s: SwitchId, port: u16, prio: usize, xoff: bool) {
        self.pauses.push(PauseMark {
            t_ns,
            switch: s.0,
            port,
            prio,
            xoff,
        });
    }

    /// Mean and 99th percentile of monitor `i`'s queue depth over samples taken at or after
    /// `from_ns`.
    pub fn queue_stats(&self, i: usize, from_ns: u64) -> (f64, u64) {
        let mut v: Vec<u64> = self
            .rows
            .iter()
            .filter(|r| r.t_ns >= from_ns)
            .filter_map(|r| r.queue_bytes.get(i).copied())
            .collect();
        if v.is_empty() {
            return (0.0, 0);
        }
        v.sort_unstable();
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        let idx = ((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1;
        (mean, v.get(idx).copied().unwrap_or(0))
    }
}
