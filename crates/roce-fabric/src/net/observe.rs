//! What the fabric shows the outside while it runs: the telemetry of every port and host
//! ([`crate::record::telemetry`]) and the capture of one port ([`crate::record::capture`]). The glue between
//! the fabric and those collectors, which know nothing of the fabric.

use super::fabric::Fabric;
use crate::record::capture::{some_names, CapturedFrame, PortCapture, PortRefError};
use crate::record::series::Recorder;
use crate::record::telemetry::Telemetry;
use crate::{HostId, Node, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};

impl<E: Engine> Fabric<E> {
    /// Takes the telemetry sample of now (on the recorder's sampling event).
    pub(super) fn sample_telemetry(&self, t: &mut Telemetry<E>) {
        if !t.knows_ports() {
            let ports = self
                .switch_ports()
                .map(|(s, p)| (Node::Switch(s), p, self.switch_name(s).to_owned()))
                .collect();
            let hosts = (0..self.host_count())
                .map(|h| self.host_name(HostId(h)).to_owned())
                .collect();
            let switches = (0..self.switches.len())
                .map(SwitchId)
                .filter_map(|s| {
                    let sw = self.switches.get(s.0)?;
                    Some((s, sw.name().to_owned(), sw.config().buffer_bytes))
                })
                .collect();
            t.learn(ports, hosts, switches);
            t.set_watchdog(self.switches.iter().any(|s| s.watchdog().is_some()));
        }
        if t.sample(self.now(), |n, p, q| self.depth(n, p, q), |s| self.used(s)) {
            self.close_telemetry_bin(t);
        }
    }

    /// Takes at once the samples due before `stop` when nothing is left to happen (no event
    /// is queued anywhere but the next sample, and the sample just taken moved nothing): each
    /// would be the one just taken, so the recorder repeats it and the telemetry counts its
    /// depths, closing its bins where they end. Counts their events and tie keys as if each
    /// had been handled, and leaves the clock at the last, so that the run goes on (or
    /// resumes after the caller adds work) exactly as if it had taken them one by one.
    pub(super) fn sample_idle_until(&mut self, rec: &mut Recorder<E>, stop: Instant) {
        let iv = rec.interval.max(Duration::NANOSECOND);
        let from = self.w.now;
        // Samples at from + k * iv, k = 1..=due, before `stop`.
        let due = (stop - Duration::NANOSECOND)
            .saturating_since(from)
            .div_floor(iv);
        if due == 0 {
            return;
        }
        rec.repeat_last(due);
        if let Some(t) = rec.telemetry.as_mut() {
            let mut taken = 0;
            while taken < due {
                // The first sample at or after the open bin's end closes it.
                let j = t
                    .bin_end()
                    .saturating_since(from)
                    .div_ceil(iv)
                    .max(taken + 1);
                if j > due {
                    t.sample_n(due - taken, |n, p, q| self.depth(n, p, q), |s| self.used(s));
                    break;
                }
                t.sample_n(j - taken, |n, p, q| self.depth(n, p, q), |s| self.used(s));
                self.w.now = from + iv.saturating_mul(j);
                self.close_telemetry_bin(t);
                taken = j;
            }
        }
        self.w.now = from + iv.saturating_mul(due);
        self.w.events += due;
        self.w.idle_samples += due;
        // Each sample scheduled the next with a fabric-wide tie key.
        self.w.global_seq += due;
    }

    /// Samples taken at once because nothing was left to happen, counted in
    /// [`Fabric::events`] as the events they stand for (a run whose flows are done ends in
    /// time that does not grow with its duration).
    pub fn idle_samples(&self) -> u64 {
        self.w.idle_samples
    }

    /// Whether every other partition is idle, as a parallel run tells its partitions: a test
    /// sets it to take idle samples at once or (false) one by one.
    #[cfg(test)]
    pub(crate) fn set_idle_elsewhere(&mut self, idle: bool) {
        self.w.idle_elsewhere = idle;
    }

    /// The depth of `node`'s `port` queue of priority `prio`, bytes (0 for a host).
    fn depth(&self, node: Node, port: u16, prio: usize) -> u64 {
        match node {
            Node::Switch(s) => self
                .switches
                .get(s.0)
                .map_or(0, |sw| sw.queue_depth(port, prio)),
            Node::Host(_) => 0,
        }
    }

    /// Bytes in switch `s`'s shared buffer.
    fn used(&self, s: SwitchId) -> u64 {
        self.switches.get(s.0).map_or(0, |sw| sw.used_bytes())
    }

    fn close_telemetry_bin(&self, t: &mut Telemetry<E>) {
        let now = self.now();
        t.close_bin(now, |n, p| self.port_counters(n, p), |h| self.engine(h));
    }

    /// Closes the recorder's last telemetry bin at the current time (call it when a run ends).
    pub fn finish_telemetry(&mut self) {
        if let Some(mut rec) = self.recorder.take() {
            if let Some(t) = rec.telemetry.as_mut() {
                if t.knows_ports() && t.open_at(self.now()) {
                    self.close_telemetry_bin(t);
                }
            }
            self.recorder = Some(rec);
        }
    }

    /// The port `spec` names: `NODE:PORT` or a host's `NODE` alone (its NIC, port 0). NODE is a
    /// node's name (`sw0`, `leaf1r0`, `h3`) or `host<N>` / `switch<N>` by index.
    pub fn find_port(&self, spec: &str) -> Result<(Node, u16), PortRefError> {
        let (name, port) = match spec.rsplit_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (spec, None),
        };
        let by_index = |prefix: &str| name.strip_prefix(prefix)?.parse::<usize>().ok();
        let switch = (0..self.switches.len())
            .find(|&s| self.switch_name(SwitchId(s)) == name)
            .or_else(|| by_index("switch").filter(|&s| s < self.switches.len()));
        let host = (0..self.host_count())
            .find(|&h| self.host_name(HostId(h)) == name)
            .or_else(|| by_index("host").filter(|&h| h < self.host_count()));
        let (node, count) = match (switch, host) {
            (Some(s), _) => (
                Node::Switch(SwitchId(s)),
                self.switches.get(s).map_or(0, |sw| sw.port_count()),
            ),
            (None, Some(h)) => (Node::Host(HostId(h)), 1),
            (None, None) => {
                return Err(PortRefError::NoSuchNode {
                    name: name.to_owned(),
                    switches: some_names(self.switches.iter().map(|s| s.name())),
                    hosts: some_names(self.hosts.iter().map(|h| h.name.as_str())),
                })
            }
        };
        let port = match (port, node) {
            (None, Node::Host(_)) => 0,
            (None, Node::Switch(_)) => return Err(PortRefError::NoPort(name.to_owned())),
            (Some(p), _) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| usize::from(p) < count)
                .ok_or_else(|| PortRefError::NoSuchPort {
                    node: name.to_owned(),
                    port: p.to_owned(),
                    count,
                })?,
        };
        Ok((node, port))
    }

    /// Captures every frame crossing `node`'s `port` from now on (one port at a time).
    pub fn capture_port(&mut self, node: Node, port: u16) {
        self.w.capture = Some(PortCapture {
            at: (node, port),
            frames: Vec::new(),
        });
    }

    /// The frames captured since the last drain, oldest first.
    pub fn drain_captured(&mut self) -> Vec<CapturedFrame> {
        self.w
            .capture
            .as_mut()
            .map(|c| std::mem::take(&mut c.frames))
            .unwrap_or_default()
    }
}
