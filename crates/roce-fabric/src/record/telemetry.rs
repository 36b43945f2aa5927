//! Telemetry the way a fabric validation plan reads it: per port and priority the queue depth
//! (mean, p99, max), drops by reason, PFC pause frames sent and received with the paused time,
//! ECN marks, PFC watchdog storms; per host the notification and reaction point's CNPs, retransmissions, timeouts,
//! NAKs and QP errors. Counters are snapshotted at the end of every bin (the CSV time series)
//! and summed over the run (the summary's `ports` and `hosts`).
//!
//! It rides on the recorder's sampling event, so it changes no outcome. It keeps every port and
//! priority of every node while the run goes, and reports only those that saw anything (a
//! frame, a drop, a pause, a queued byte): a data-centre fabric has thousands of idle series.

use serde::{Deserialize, Serialize};

use crate::switching::stats::{DropReasons, PortCounters, PrioCounters};
use crate::{HostId, Node, SwitchId};
use roce_proto::counters::RdmaCounters;
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::pfc::PRIORITIES;

/// What a host's transport counted, under the mlx5/rxe names where one exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCounters {
    /// CE-marked RoCEv2 packets received (notification point).
    pub np_ecn_marked_roce_packets: u64,
    /// CNPs sent (notification point).
    pub np_cnp_sent: u64,
    /// CNPs received and handed to the reaction point.
    pub rp_cnp_handled: u64,
    /// Request packets sent again (go-back-N).
    pub retransmitted_packets: u64,
    /// ACK timeouts that fired.
    pub local_ack_timeout_err: u64,
    /// NAKs received: sequence errors (`packet_seq_err`), RNR, remote access and invalid request.
    pub naks: u64,
    /// Work completions with an error status.
    pub error_completions: u64,
    /// QPs in the error state (a level, not a count of events).
    pub qp_errors: u64,
}

impl HostCounters {
    /// The counters of a port's `rdma statistic`, and `qp_errors` QPs in the error state.
    pub fn of(c: &RdmaCounters, qp_errors: u64) -> Self {
        HostCounters {
            np_ecn_marked_roce_packets: c.np_ecn_marked_roce_packets,
            np_cnp_sent: c.np_cnp_sent,
            rp_cnp_handled: c.rp_cnp_handled,
            retransmitted_packets: c.retransmitted_packets,
            local_ack_timeout_err: c.local_ack_timeout_err,
            naks: c.naks_received(),
            error_completions: c.error_completions,
            qp_errors,
        }
    }

    /// What happened between `before` and `self` (`qp_errors` stays a level).
    pub fn since(&self, before: &HostCounters) -> HostCounters {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        HostCounters {
            np_ecn_marked_roce_packets: d(
                self.np_ecn_marked_roce_packets,
                before.np_ecn_marked_roce_packets,
            ),
            np_cnp_sent: d(self.np_cnp_sent, before.np_cnp_sent),
            rp_cnp_handled: d(self.rp_cnp_handled, before.rp_cnp_handled),
            retransmitted_packets: d(self.retransmitted_packets, before.retransmitted_packets),
            local_ack_timeout_err: d(self.local_ack_timeout_err, before.local_ack_timeout_err),
            naks: d(self.naks, before.naks),
            error_completions: d(self.error_completions, before.error_completions),
            qp_errors: self.qp_errors,
        }
    }
}

/// Reads a host's transport counters out of its engine.
pub type HostProbe<E> = fn(&E) -> HostCounters;

/// One port and priority over the run (the summary's `ports`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PortTelemetry {
    /// Node name (`sw0`, `leaf1r0`, `h3`).
    pub node: String,
    /// Port index on the node (0 for a host's NIC).
    pub port: u16,
    /// 802.1p priority.
    pub priority: u8,
    /// Mean egress queue depth over the run's samples, bytes.
    pub queue_mean_bytes: f64,
    /// 99th percentile of the same samples, bytes.
    pub queue_p99_bytes: u64,
    /// Largest depth the queue reached (exact, not sampled), bytes.
    pub queue_max_bytes: u64,
    /// Frames sent.
    pub tx_packets: u64,
    /// Frames received.
    pub rx_packets: u64,
    /// Packets this egress marked CE.
    pub ecn_marked: u64,
    /// Packets dropped (the sum of `dropped` without `switch_reboot` and `fcs_error`).
    pub drops: u64,
    /// Packets dropped, by reason.
    pub dropped: DropReasons,
    /// PFC frames this port sent upstream for the priority (mlx5 `tx_prio<p>_pause`).
    pub tx_pause: u64,
    /// PFC frames it received for the priority (mlx5 `rx_prio<p>_pause`).
    pub rx_pause: u64,
    /// Time its transmitter was held by them, µs (mlx5 `rx_prio<p>_pause_duration`).
    pub rx_pause_duration_us: f64,
    /// PFC storms the switch's watchdog detected on this egress queue (absent while zero).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pfc_wd_storms: u64,
    /// Storms on it the watchdog restored (absent while zero).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pfc_wd_restored: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One host over the run (the summary's `hosts`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostTelemetry {
    /// Host name.
    pub host: String,
    /// Its transport's counters at the end.
    #[serde(flatten)]
    pub counters: HostCounters,
    /// PFC frames its NIC received, all priorities.
    pub rx_pause: u64,
    /// Time its NIC was paused, all priorities, µs.
    pub rx_pause_duration_us: f64,
}

/// The samples of one telemetry bin: their sum (each weighted by how many sample times it
/// stood for) and largest value.
#[derive(Clone, Copy, Debug, Default)]
struct BinSamples {
    sum: u64,
    max: u64,
}

impl BinSamples {
    /// `value`, found `n` sample times in a row.
    fn add(&mut self, value: u64, n: u64) {
        self.sum = self.sum.saturating_add(value.saturating_mul(n));
        self.max = self.max.max(value);
    }

    /// The bin's mean over `n` samples and its maximum; the next bin starts empty.
    fn close(&mut self, n: f64) -> (f64, u64) {
        let v = (self.sum as f64 / n, self.max);
        *self = BinSamples::default();
        v
    }
}

/// Queue samples of one port and priority: the run's and the current bin's.
#[derive(Clone, Debug, Default)]
struct QueueSamples {
    sum: u64,
    /// Non-zero samples (zeros are the rest of the sample count), for the percentile: each
    /// depth with how many samples in a row found it.
    nonzero: Vec<(u32, u64)>,
    bin: BinSamples,
}

/// Samples of one switch's shared-buffer occupancy: the run's and the current bin's.
#[derive(Clone, Debug, Default)]
struct BufferSamples {
    sum: u64,
    max: u64,
    bin: BinSamples,
}

/// One switch's shared buffer over the run (the summary's `buffers`): sampled on the
/// recorder's sampling event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BufferTelemetry {
    /// Switch name.
    pub node: String,
    /// The buffer's size, bytes.
    pub buffer_bytes: u64,
    /// Mean occupancy over the run's samples, bytes.
    pub mean_bytes: f64,
    /// Largest sampled occupancy, bytes.
    pub max_bytes: u64,
}

impl BufferTelemetry {
    /// The summary's lines: the `rows` switches whose buffer filled most, fullest first.
    pub fn lines(buffers: &[BufferTelemetry], rows: usize) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        if buffers.is_empty() {
            return s;
        }
        let mut order: Vec<&BufferTelemetry> = buffers.iter().collect();
        order.sort_by(|a, b| b.max_bytes.cmp(&a.max_bytes).then(a.node.cmp(&b.node)));
        let _ = writeln!(s, "shared buffer by switch (sampled occupancy):");
        for b in order.iter().take(rows) {
            let pct = |x: f64| 100.0 * x / b.buffer_bytes.max(1) as f64;
            let _ = writeln!(
                s,
                "  {:<14} mean {:>10.0} B ({:>5.1}%)  max {:>10} B ({:>5.1}%)  of {} B",
                b.node,
                b.mean_bytes,
                pct(b.mean_bytes),
                b.max_bytes,
                pct(b.max_bytes as f64),
                b.buffer_bytes
            );
        }
        if order.len() > rows {
            let _ = writeln!(s, "  ... {} more (--json)", order.len() - rows);
        }
        s
    }
}

/// The end of one bin: every series' cumulative counters and its queue in the bin.
#[derive(Clone, Debug, PartialEq)]
pub struct Bin {
    /// Virtual time at the end of the bin.
    pub end: Instant,
    /// Per series (see [`Telemetry::series`]): counters so far (pause times up to `end`).
    pub ports: Vec<PrioCounters>,
    /// Per series: mean and largest sampled queue depth in the bin, bytes.
    pub queue: Vec<(f64, u64)>,
    /// Per switch (see [`Telemetry::switches`]): mean and largest sampled shared-buffer
    /// occupancy in the bin, bytes.
    pub buffer: Vec<(f64, u64)>,
    /// Per host: transport counters so far.
    pub hosts: Vec<HostCounters>,
}

/// Collects the telemetry of every port and host while a fabric runs.
pub struct Telemetry<E> {
    bin: Duration,
    probe: Option<HostProbe<E>>,
    /// (node, port) of each port, in series order; series `i * 8 + prio`.
    nodes: Vec<(Node, u16, String)>,
    hosts: Vec<String>,
    /// Every switch with its name and buffer size, in switch order.
    switches: Vec<(SwitchId, String, u64)>,
    queues: Vec<QueueSamples>,
    buffers: Vec<BufferSamples>,
    samples: u64,
    bin_samples: u64,
    /// Whether a switch runs a PFC watchdog (its counters are then reported).
    watchdog: bool,
    /// Closed bins.
    pub bins: Vec<Bin>,
}

impl<E: Engine> Telemetry<E> {
    /// Bins of `bin` (at least a nanosecond), host counters read through `probe` (none
    /// without).
    pub fn new(bin: Duration, probe: Option<HostProbe<E>>) -> Self {
        Telemetry {
            bin: bin.max(Duration::NANOSECOND),
            probe,
            nodes: Vec::new(),
            hosts: Vec::new(),
            switches: Vec::new(),
            queues: Vec::new(),
            buffers: Vec::new(),
            samples: 0,
            bin_samples: 0,
            watchdog: false,
            bins: Vec::new(),
        }
    }

    /// Every (node name, port, priority) series, in the order of [`Bin::ports`].
    pub fn series(&self) -> impl Iterator<Item = (&str, u16, u8)> + '_ {
        self.nodes.iter().flat_map(|(_, port, name)| {
            (0..PRIORITIES as u8).map(move |p| (name.as_str(), *port, p))
        })
    }

    /// Switches (name, buffer bytes), in the order of [`Bin::buffer`].
    pub fn switches(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.switches.iter().map(|(_, n, b)| (n.as_str(), *b))
    }

    /// Host names, in the order of [`Bin::hosts`].
    pub fn host_names(&self) -> &[String] {
        &self.hosts
    }

    /// Whether series `i` saw anything in the run (the rows reports keep).
    pub fn active(&self, i: usize) -> bool {
        let last = self.bins.last().and_then(|b| b.ports.get(i));
        let queued = self.queues.get(i).is_some_and(|q| q.sum > 0);
        queued || last.is_some_and(|c| *c != PrioCounters::default())
    }

    /// Whether a switch of the run has a PFC watchdog (the CSV then has its columns).
    pub fn watchdog(&self) -> bool {
        self.watchdog
    }

    /// Says whether a switch of the run has a PFC watchdog.
    pub(crate) fn set_watchdog(&mut self, on: bool) {
        self.watchdog = on;
    }

    /// Whether the ports are known yet.
    pub(crate) fn knows_ports(&self) -> bool {
        !self.nodes.is_empty()
    }

    /// Learns the ports to follow: every switch port, then every host's NIC (in host order),
    /// and the switches' buffers (id, name, bytes).
    pub(crate) fn learn(
        &mut self,
        switch_ports: Vec<(Node, u16, String)>,
        hosts: Vec<String>,
        switches: Vec<(SwitchId, String, u64)>,
    ) {
        self.nodes = switch_ports;
        self.buffers = vec![BufferSamples::default(); switches.len()];
        self.switches = switches;
        for (h, name) in hosts.iter().enumerate() {
            self.nodes.push((Node::Host(HostId(h)), 0, name.clone()));
        }
        self.hosts = hosts;
        self.queues = vec![QueueSamples::default(); self.nodes.len() * PRIORITIES];
    }

    /// Takes one queue sample of every series at `now` (`depth(node, port, prio)`) and of
    /// every switch's buffer (`used(switch)`); true when the bin has ended (the caller then
    /// closes it with [`Telemetry::close_bin`]).
    pub(crate) fn sample(
        &mut self,
        now: Instant,
        depth: impl Fn(Node, u16, usize) -> u64,
        used: impl Fn(SwitchId) -> u64,
    ) -> bool {
        self.sample_n(1, depth, used);
        now >= self.bin_end()
    }

    /// When the open bin ends.
    pub(crate) fn bin_end(&self) -> Instant {
        Instant::ZERO + self.bin.saturating_mul(self.bins.len() as u64 + 1)
    }

    /// Takes `n` samples of every series that all find `depth(node, port, prio)` and every
    /// switch's buffer at `used(switch)` (the queues stand still), closing no bin.
    pub(crate) fn sample_n(
        &mut self,
        n: u64,
        depth: impl Fn(Node, u16, usize) -> u64,
        used: impl Fn(SwitchId) -> u64,
    ) {
        self.samples += n;
        self.bin_samples += n;
        for ((s, _, _), b) in self.switches.iter().zip(&mut self.buffers) {
            let used = used(*s);
            b.sum = b.sum.saturating_add(used.saturating_mul(n));
            b.max = b.max.max(used);
            b.bin.add(used, n);
        }
        for (i, &(node, port, _)) in self.nodes.iter().enumerate() {
            for prio in 0..PRIORITIES {
                let depth = depth(node, port, prio);
                if let Some(q) = self.queues.get_mut(i * PRIORITIES + prio) {
                    q.sum = q.sum.saturating_add(depth.saturating_mul(n));
                    q.bin.add(depth, n);
                    if depth > 0 {
                        let d = u32::try_from(depth).unwrap_or(u32::MAX);
                        match q.nonzero.last_mut() {
                            Some((last, c)) if *last == d => *c += n,
                            _ => q.nonzero.push((d, n)),
                        }
                    }
                }
            }
        }
    }

    /// Whether a run ending at `now` leaves a bin open.
    pub(crate) fn open_at(&self, now: Instant) -> bool {
        self.bins.last().is_none_or(|b| b.end < now)
    }

    /// Closes the bin at `now` with every port's counters (`counters(node, port)`) and every
    /// host's engine (`engine(host)`, read through the probe).
    pub(crate) fn close_bin<'e>(
        &mut self,
        now: Instant,
        counters: impl Fn(Node, u16) -> PortCounters,
        engine: impl Fn(HostId) -> Option<&'e E>,
    ) where
        E: 'e,
    {
        let n = self.bin_samples.max(1) as f64;
        let queue = self.queues.iter_mut().map(|q| q.bin.close(n)).collect();
        let buffer = self.buffers.iter_mut().map(|b| b.bin.close(n)).collect();
        self.bin_samples = 0;
        let ports = self
            .nodes
            .iter()
            .flat_map(|&(node, port, _)| counters(node, port).prio)
            .collect();
        let hosts = (0..self.hosts.len())
            .map(|h| {
                let e = engine(HostId(h));
                e.zip(self.probe).map(|(e, p)| p(e)).unwrap_or_default()
            })
            .collect();
        self.bins.push(Bin {
            end: now,
            ports,
            queue,
            buffer,
            hosts,
        });
    }

    /// Mean, 99th percentile and count of series `i`'s queue samples.
    fn queue_stats(&self, i: usize) -> (f64, u64) {
        let Some(q) = self.queues.get(i) else {
            return (0.0, 0);
        };
        let n = self.samples.max(1);
        let mut nz = q.nonzero.clone();
        nz.sort_unstable();
        let idx = ((n as f64 * 0.99).ceil() as u64).clamp(1, n) - 1;
        let zeros = n.saturating_sub(nz.iter().map(|&(_, c)| c).sum());
        let p99 = idx.checked_sub(zeros).map_or(0, |k| {
            let mut seen = 0;
            nz.iter()
                .find(|&&(_, c)| {
                    seen += c;
                    seen > k
                })
                .map_or(0, |&(v, _)| u64::from(v))
        });
        (q.sum as f64 / n as f64, p99)
    }

    /// The run's totals per active port and priority (counters as of the last bin).
    pub fn ports(&self) -> Vec<PortTelemetry> {
        let Some(last) = self.bins.last() else {
            return Vec::new();
        };
        self.series()
            .zip(&last.ports)
            .enumerate()
            .filter(|(i, _)| self.active(*i))
            .map(|(i, ((node, port, priority), c))| {
                let (queue_mean_bytes, queue_p99_bytes) = self.queue_stats(i);
                PortTelemetry {
                    node: node.to_owned(),
                    port,
                    priority,
                    queue_mean_bytes,
                    queue_p99_bytes,
                    queue_max_bytes: c.queue_hwm_bytes,
                    tx_packets: c.tx_packets,
                    rx_packets: c.rx_packets,
                    ecn_marked: c.ecn_marked,
                    drops: c.drops,
                    dropped: c.dropped,
                    tx_pause: c.pause_sent,
                    rx_pause: c.pause_received,
                    rx_pause_duration_us: c.pause_ns as f64 / 1e3,
                    pfc_wd_storms: c.pfc_wd_storms,
                    pfc_wd_restored: c.pfc_wd_restored,
                }
            })
            .collect()
    }

    /// The run's shared-buffer occupancy per switch that held anything.
    pub fn buffers(&self) -> Vec<BufferTelemetry> {
        let n = self.samples.max(1) as f64;
        self.switches
            .iter()
            .zip(&self.buffers)
            .filter(|(_, b)| b.max > 0)
            .map(|((_, node, buffer_bytes), b)| BufferTelemetry {
                node: node.clone(),
                buffer_bytes: *buffer_bytes,
                mean_bytes: b.sum as f64 / n,
                max_bytes: b.max,
            })
            .collect()
    }

    /// Host `h`'s NIC counters, all priorities summed, out of a bin's `ports` (host NICs are
    /// the last series, in host order).
    pub fn nic(&self, ports: &[PrioCounters], h: usize) -> PrioCounters {
        let first = (self.nodes.len() - self.hosts.len() + h) * PRIORITIES;
        let mut sum = PrioCounters::default();
        for c in ports.get(first..first + PRIORITIES).unwrap_or_default() {
            sum.accumulate(c);
        }
        sum
    }

    /// The run's totals per host (transport counters as of the last bin, NIC pauses).
    pub fn hosts(&self) -> Vec<HostTelemetry> {
        let Some(last) = self.bins.last() else {
            return Vec::new();
        };
        self.hosts
            .iter()
            .zip(&last.hosts)
            .enumerate()
            .map(|(h, (name, counters))| {
                let p = self.nic(&last.ports, h);
                HostTelemetry {
                    host: name.clone(),
                    counters: *counters,
                    rx_pause: p.pause_received,
                    rx_pause_duration_us: p.pause_ns as f64 / 1e3,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // Any engine will do: these tests feed samples, not frames.
    use roce_proto::endpoint::Endpoint;

    /// One switch port sampled with `depths` one by one, and with runs of equal depths at
    /// once: the same mean and p99 as the depths sorted one by one.
    #[test]
    fn runs_of_equal_samples_keep_mean_and_p99() {
        let depths: Vec<u64> = [vec![0; 50], vec![7000; 60], vec![300; 5], vec![7000; 3]]
            .concat()
            .into_iter()
            .chain((1..=200).map(|d| d * 10))
            .collect();
        let new = || {
            let mut t = Telemetry::<Endpoint>::new(Duration::from_millis(1), None);
            t.learn(
                vec![(Node::Switch(SwitchId(0)), 0, "sw0".into())],
                Vec::new(),
                vec![(SwitchId(0), "sw0".into(), 1 << 20)],
            );
            t
        };
        let mut one = new();
        for &d in &depths {
            one.sample(
                Instant::from_nanos(1),
                |_, _, p| if p == 3 { d } else { 0 },
                |_| 2 * d,
            );
        }
        let mut runs = new();
        for chunk in depths.chunk_by(|a, b| a == b) {
            let d = chunk[0];
            let n = chunk.len() as u64;
            runs.sample_n(n, |_, _, p| if p == 3 { d } else { 0 }, |_| 2 * d);
        }
        let mut sorted = depths.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        let p99 = sorted[(n as f64 * 0.99).ceil() as usize - 1];
        let mean = depths.iter().sum::<u64>() as f64 / n as f64;
        assert_eq!(one.queue_stats(3), (mean, p99));
        assert_eq!(runs.queue_stats(3), (mean, p99));
        assert!(runs.queues[3].nonzero.len() < 210);
        // The buffer held twice the queue at every sample.
        let max = *depths.iter().max().unwrap();
        for t in [&one, &runs] {
            let b = t.buffers();
            assert_eq!(b.len(), 1);
            assert_eq!((b[0].mean_bytes, b[0].max_bytes), (2.0 * mean, 2 * max));
        }
    }
}
