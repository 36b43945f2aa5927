//! The demo's polling loop: each round polls the hosts (on the main thread, or on lcores) and
//! the switch, copies what crosses the switch to the capture and the tap mirror, publishes the
//! metrics, samples the series and updates the progress; posting stops at the end of the
//! duration, and the loop ends once every flow has finished and what was in flight has landed
//! (or after the drain timeout). Not here: setting up ([`super::rig`]), the flows' application
//! ([`super::flows`]), the summary ([`super::summary`]).

use roce::metrics::Exposition;
use roce::pcap::CaptureWriter;
use roce::report::demo::{HostPause, Series};
use roce_dpdk::clock::{Clock, MonotonicClock};
use roce_dpdk::{DpdkPort, Mbuf};
use roce_fabric::switching::rt_switch::RtSwitch;
use roce_proto::port::{FrameBuf, Port};
use roce_proto::time::{Duration, Instant};

use super::flows::{self, Flow};
use super::lcores;
use super::rig::Rig;
use super::summary::{exposition, with_switch};
use super::{views, Host, Plan, DRAIN_TIMEOUT, LOSSLESS, SAMPLE_EVERY};
use crate::cli::ops::Op;
use crate::cli::progress::Progress;

/// The hosts and flows, driven by the main thread or on lcores.
pub(super) enum Run<'c> {
    /// One thread polls every host and runs the application after each.
    Inline {
        hosts: Vec<Host<'c>>,
        flows: Vec<Flow>,
    },
    /// Each host on an lcore, the application as in-lcore tasks.
    Lcores(lcores::ShardedHosts),
}

impl Run<'_> {
    /// The flows with their progress now.
    pub(super) fn flows(&mut self) -> &[Flow] {
        match self {
            Run::Inline { flows, .. } => flows,
            Run::Lcores(l) => l.flows(),
        }
    }

    /// Flow `i` (as of the last [`Run::flows`]).
    pub(super) fn flow(&self, i: usize) -> Option<&Flow> {
        match self {
            Run::Inline { flows, .. } => flows.get(i),
            Run::Lcores(l) => l.flow(i),
        }
    }

    /// The controller of flow `i`'s sending QP now.
    pub(super) fn cc(&self, i: usize) -> roce_proto::cc::CcMetrics {
        match self {
            Run::Inline { hosts, flows } => flows
                .get(i)
                .map(|f| flows::cc_metrics(&views(hosts), f))
                .unwrap_or_default(),
            Run::Lcores(l) => l.cc(i),
        }
    }

    /// Every flow has nothing outstanding (and, on lcores, every WRITE is verified).
    pub(super) fn finished(&mut self) -> bool {
        let on_lcores = matches!(self, Run::Lcores(_));
        self.flows()
            .iter()
            .all(|f| f.finished() && (!on_lcores || f.op != Op::Write || f.verified >= f.completed))
    }

    /// CNPs sent so far.
    pub(super) fn cnps(&self) -> u64 {
        match self {
            Run::Inline { hosts, .. } => hosts.iter().map(|h| h.ep.counters().cnps_sent).sum(),
            Run::Lcores(l) => l.cnps(),
        }
    }

    /// The counters now, for the metrics.
    pub(super) fn exposition(&self, switch: &RtSwitch<DpdkPort>, now: Instant) -> Exposition {
        match self {
            Run::Inline { hosts, .. } => exposition(&views(hosts), switch, now),
            Run::Lcores(l) => with_switch(l.ports(), None, switch),
        }
    }

    /// What PFC did to each host's transmitter up to `now` (hosts on the main thread only).
    pub(super) fn pauses(&self, now: Instant) -> Vec<HostPause> {
        let Run::Inline { hosts, .. } = self else {
            return Vec::new();
        };
        hosts
            .iter()
            .filter_map(|h| {
                let p = h.rt.pause()?;
                Some(HostPause {
                    host: h.name.clone(),
                    rx_prio3_pause: p.frames(LOSSLESS),
                    rx_prio3_pause_duration_us: p.paused(LOSSLESS, now).as_nanos() / 1_000,
                    tx_pause_holds: h.rt.counters().tx_pause_holds,
                })
            })
            .collect()
    }

    /// The hosts' names and endpoints, and the flows, once traffic is over.
    pub(super) fn finish(self) -> anyhow::Result<flows::Ended> {
        match self {
            Run::Inline { hosts, flows } => {
                Ok((hosts.into_iter().map(|h| (h.name, h.ep)).collect(), flows))
            }
            Run::Lcores(l) => l.finish(),
        }
    }
}

/// The status line: time is prefixed by [`Progress`]; goodput so far over all flows, marks, CNPs,
/// the lowest congestion-control rate now and the bottleneck queue.
fn status_line(run: &mut Run, switch: &RtSwitch<DpdkPort>, series: &Series, size: u32) -> String {
    let cnps = run.cnps();
    let rate = (0..run.flows().len())
        .map(|i| run.cc(i).rate.as_gbps_f64())
        .fold(f64::INFINITY, f64::min);
    let flows = run.flows();
    let bytes: u64 = flows.iter().map(|f| f.verified * u64::from(size)).sum();
    let msgs: u64 = flows.iter().map(|f| f.verified).sum();
    let secs = series.rec.rows.last().map_or(0.0, |r| r.t_ns as f64 / 1e9);
    format!(
        "{:.3} Gbit/s, ecn_marked {}, np_cnp_sent {cnps}, cc rate min {:.3} Gbit/s, queue {:.1} KB, {msgs} msgs verified",
        if secs > 0.0 { bytes as f64 * 8.0 / secs / 1e9 } else { 0.0 },
        switch.counters().ecn_marked,
        if rate.is_finite() { rate } else { 0.0 },
        switch.queue_bytes(0) as f64 / 1e3
    )
}

/// What the loop leaves for the summary: the series, when traffic started, when every flow had
/// finished, and whether some never did.
pub(super) struct Driven {
    pub(super) series: Series,
    pub(super) start: Instant,
    /// When the last flow finished after posting stopped (none: it timed out).
    pub(super) drained_at: Option<Instant>,
    /// Flows were still outstanding at the deadline.
    pub(super) timed_out: bool,
}

/// Polls until traffic is over: the duration of `plan`, then until the flows have finished and
/// settled. `bar`: a progress bar on a terminal.
pub(super) fn drive(
    rig: &mut Rig,
    run: &mut Run,
    clock: &MonotonicClock,
    writer: &mut Option<CaptureWriter>,
    plan: &Plan,
    bar: bool,
) -> Driven {
    let mut progress = Progress::new("roce demo", Some(plan.duration), bar, plan.status);
    let mut series = Series::new(SAMPLE_EVERY, 0);
    let (mut mirror_out, mut mirror_in) = (Vec::new(), Vec::new());
    let mut scratch = Vec::new();
    let mut marks = Marks::new(clock.now(), plan.duration);
    let mut rounds = 0u64;
    let timed_out = loop {
        rounds += 1;
        let now = clock.now();
        let posting = now < marks.end;
        let work = round(
            rig,
            run,
            clock,
            writer,
            &mut mirror_out,
            posting,
            &mut scratch,
        );
        rig.publisher
            .offer(&rig.hub, || run.exposition(&rig.switch, now));
        if let Some(m) = rig.mirror.as_mut() {
            m.tx_burst(&mut mirror_out);
            mirror_out.clear();
            // Whatever the kernel sends into the mirror (router solicitations...) is dropped.
            let _ = m.rx_burst(&mut mirror_in, 32);
            mirror_in.clear();
        }
        if now >= marks.next_sample && marks.drained_at.is_none() {
            marks.next_sample = now + SAMPLE_EVERY;
            let t = now.saturating_since(marks.start).as_nanos();
            sample(&mut series, run, &rig.switch, t, plan.size);
        }
        if marks.drained_at.is_none() {
            let elapsed = now.saturating_since(marks.start);
            progress.update(elapsed.into(), || {
                status_line(run, &rig.switch, &series, plan.size)
            });
        }
        if let Some(timed_out) = marks.over(run, work, now, posting) {
            break timed_out;
        }
    };
    progress.finish();
    tracing::debug!(rounds, "polling rounds");
    Driven {
        series,
        start: marks.start,
        drained_at: marks.drained_at,
        timed_out,
    }
}

/// One round: every host polled and its application run after it, the switch polled after each
/// (on lcores: posting stopped when it is over, the switch polled); what crosses the switch
/// goes to the capture and is queued for the mirror. Returns the work done.
fn round(
    rig: &mut Rig,
    run: &mut Run,
    clock: &MonotonicClock,
    writer: &mut Option<CaptureWriter>,
    mirror_out: &mut Vec<Mbuf>,
    posting: bool,
    scratch: &mut Vec<u8>,
) -> usize {
    let Rig {
        switch,
        mirror,
        pool,
        ..
    } = rig;
    let mirroring = mirror.is_some();
    let mut on_egress = |frame: &[u8]| {
        if let Some(w) = writer.as_mut() {
            let ts = std::time::Duration::from_nanos(clock.now().as_nanos());
            if let Err(e) = w.write_frame(ts, frame) {
                tracing::warn!(error = %e, "pcap write failed");
            }
        }
        if mirroring {
            if let Some(mut m) = pool.alloc() {
                if m.set_frame_len(frame.len()) {
                    m.frame_mut().copy_from_slice(frame);
                    mirror_out.push(m);
                }
            }
        }
    };
    let mut work = 0;
    match run {
        Run::Inline { hosts, flows } => {
            for i in 0..hosts.len() {
                let Some(h) = hosts.get_mut(i) else { continue };
                work += h.rt.poll_once(&mut h.ep);
                flows::drive(i, hosts, flows, posting, scratch, clock);
                work += switch.poll(clock.now(), &mut on_egress);
            }
        }
        Run::Lcores(l) => {
            if !posting {
                l.stop_posting();
            }
            work += switch.poll(clock.now(), &mut on_egress);
        }
    }
    work
}

/// A sample of the series at `t` ns: bytes delivered per flow, the bottleneck queue, each
/// flow's controller.
fn sample(series: &mut Series, run: &mut Run, switch: &RtSwitch<DpdkPort>, t: u64, size: u32) {
    let delivered: Vec<u64> = run
        .flows()
        .iter()
        .map(|f| f.verified * u64::from(size))
        .collect();
    let cc: Vec<(usize, u32, f64, f64)> = (0..delivered.len())
        .filter_map(|i| {
            let f = run.flow(i)?;
            let m = run.cc(i);
            Some((f.sender, f.src_qpn, m.rate.as_gbps_f64(), m.alpha))
        })
        .collect();
    series.sample(t, &delivered, switch.queue_bytes(0), &cc);
}

/// The loop's marks in time, and what it watches to tell traffic is over.
struct Marks {
    start: Instant,
    /// Posting stops.
    end: Instant,
    /// Flows should have finished by then.
    deadline: Instant,
    next_sample: Instant,
    drained_at: Option<Instant>,
    /// Frames the lcores' hosts moved, and when that number last changed.
    lcore_frames: (u64, Instant),
    /// Rounds in a row without work since the flows finished.
    idle_rounds: u32,
}

impl Marks {
    fn new(start: Instant, duration: std::time::Duration) -> Marks {
        let end = start + Duration::from(duration);
        Marks {
            start,
            end,
            deadline: end + DRAIN_TIMEOUT,
            next_sample: start + SAMPLE_EVERY,
            drained_at: None,
            lcore_frames: (0, start),
            idle_rounds: 0,
        }
    }

    /// Whether the loop is over after a round at `now` that did `work`: `Some(false)` once the
    /// flows have finished and what was in flight has landed, `Some(true)` when they did not
    /// finish by the deadline.
    fn over(&mut self, run: &mut Run, work: usize, now: Instant, posting: bool) -> Option<bool> {
        let finished = run.finished();
        if !posting && finished && self.drained_at.is_none() {
            self.drained_at = Some(now);
        }
        let Some(drained_at) = self.drained_at else {
            return (now > self.deadline).then_some(true);
        };
        // Let CNPs and ACKs still in flight land before reading counters (on lcores they may be
        // in flight while the switch is idle: only the time counts there).
        self.idle_rounds = if work == 0 { self.idle_rounds + 1 } else { 0 };
        let settled = now.saturating_since(drained_at) > Duration::from_millis(200);
        let quiet = match &*run {
            Run::Inline { .. } => true,
            Run::Lcores(l) => {
                let frames = l.frames();
                if frames != self.lcore_frames.0 {
                    self.lcore_frames = (frames, now);
                }
                self.idle_rounds >= 1000
                    && now.saturating_since(self.lcore_frames.1) > Duration::from_millis(50)
            }
        };
        let done = (self.idle_rounds >= 1000 && matches!(run, Run::Inline { .. }))
            || (settled && quiet)
            || now > self.deadline + DRAIN_TIMEOUT;
        done.then_some(false)
    }
}
