//! Splitting a fabric into partitions: whole switches with the hosts cabled to them, spread over
//! the threads heaviest first (a switch weighs one plus its hosts), each onto the lightest
//! thread so far.

use super::{Layout, ParallelError, ParallelStats, Partitions, RunMode};
use crate::net::fabric::Fabric;
use crate::net::slots::Slots;
use crate::net::transit::{code, Crossings, Transit};
use crate::{HostId, Node, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::Duration;

impl<E: Engine> Fabric<E> {
    /// Runs the fabric on up to `threads` threads from now on (see [`crate::net::fabric::parallel`]) when
    /// it is run with [`Fabric::run_until_threads`]; returns how many partitions it got (at most
    /// one per switch). Call it once, after building the fabric (and attaching a capture).
    pub fn set_threads(&mut self, threads: usize) -> Result<usize, ParallelError> {
        if threads == 0 {
            return Err(ParallelError::NoThreads);
        }
        if threads > crate::limits::bounds::MAX_THREADS {
            return Err(ParallelError::TooMany(threads));
        }
        if let RunMode::Split(par) = &self.mode {
            return Ok(par.parts.len());
        }
        if threads == 1 {
            return Ok(1);
        }
        self.prepare();
        let layout = self.layout(threads)?;
        let n = layout.hosts.len();
        if n <= 1 {
            return Ok(1);
        }
        let mut parts: Vec<Fabric<E>> = (0..n).map(|k| self.partition(k, &layout)).collect();
        let mut refs: Vec<&mut Fabric<E>> = parts.iter_mut().collect();
        self.route_events(&mut refs, &layout, false);
        tracing::info!(
            partitions = n,
            lookahead_ns = layout.lookahead.as_nanos(),
            "fabric split"
        );
        self.mode = RunMode::Split(Box::new(Partitions {
            parts,
            layout,
            stats: ParallelStats::default(),
        }));
        Ok(n)
    }

    /// Which partition each node goes to, and the lookahead that gives.
    fn layout(&self, threads: usize) -> Result<Layout, ParallelError> {
        let switches = self.switches.len();
        let n = threads.min(switches).max(1);
        let attached = |h: usize| {
            let link = self.hosts.get(h).and_then(|x| x.tx.link)?;
            match self.w.links.get(link.0)?.to.0 {
                Node::Switch(s) => Some(s.0),
                Node::Host(_) => None,
            }
        };
        let mut weight = vec![1u64; switches];
        for h in 0..self.hosts.len() {
            if let Some(w) = attached(h).and_then(|s| weight.get_mut(s)) {
                *w += 1;
            }
        }
        let mut order: Vec<usize> = (0..switches).collect();
        order.sort_by_key(|&s| (std::cmp::Reverse(weight[s]), s));
        let mut load = vec![0u64; n];
        let mut switch_part = vec![0usize; switches];
        for s in order {
            let k = (0..n).min_by_key(|&k| (load[k], k)).unwrap_or(0);
            load[k] += weight[s];
            switch_part[s] = k;
        }
        let codes = 2 * self.hosts.len().max(switches) + 2;
        let mut part_of = vec![0u16; codes];
        let mut layout = Layout {
            hosts: vec![Vec::new(); n],
            switches: vec![Vec::new(); n],
            part_of: Vec::new(),
            lookahead: Duration::MAX / 4,
        };
        for (s, &k) in switch_part.iter().enumerate() {
            layout.switches[k].push(s);
            part_of[code(Node::Switch(SwitchId(s))) as usize] = k as u16;
        }
        for h in 0..self.hosts.len() {
            let k = attached(h).map_or(0, |s| switch_part[s]);
            layout.hosts[k].push(h);
            part_of[code(Node::Host(HostId(h))) as usize] = k as u16;
        }
        layout.part_of = part_of;
        for l in &self.w.links {
            if layout.part(code(l.from.0)) != layout.part(code(l.to.0)) {
                layout.lookahead = layout.lookahead.min(l.delay);
            }
        }
        if layout.lookahead == Duration::ZERO {
            return Err(ParallelError::NoLookahead);
        }
        Ok(layout)
    }

    /// Partition `k`: no nodes yet (they move in for each run), copies of what every node
    /// reads (links, routes to hosts, registered flows), and the packet pool as it is, so
    /// that frames queued anywhere keep their ids.
    fn partition(&self, k: usize, layout: &Layout) -> Fabric<E> {
        let mut w = Transit::new(self.w.seed);
        w.now = self.w.now;
        w.links.clone_from(&self.w.links);
        w.pool = self.w.pool.clone();
        w.rngs.clone_from(&self.w.rngs);
        w.seqs.clone_from(&self.w.seqs);
        let far = self.w.links.iter().map(|l| {
            let (a, b) = (layout.part(code(l.from.0)), layout.part(code(l.to.0)));
            (a == k && b != k).then_some(b as u16)
        });
        w.cross = Some(Box::new(Crossings {
            far: far.collect(),
            out: Vec::new(),
        }));
        let mut meter = self.flow_meter.clone();
        (meter.cnp_sent, meter.cnp_received) = (0, 0);
        Fabric {
            w,
            seed: self.seed,
            hosts: Slots::empty(self.hosts.len()),
            switches: Slots::empty(self.switches.len()),
            ip_to_host: self.ip_to_host.clone(),
            scratch: vec![0; roce_proto::limits::MAX_FRAME],
            routed: true,
            // Routes are computed on the whole fabric (a fabric-wide event), never here.
            drained: Vec::new(),
            started: true,
            flow_meter: meter,
            recorder: None,
            int_sink: self.int_sink,
            routing: self.routing,
            pfc_log: self.pfc_log.as_ref().map(|_| Vec::new()),
            mode: RunMode::Part(Box::default()),
            // Deadlocks are looked for on the whole fabric (at samples), never here.
            deadlock: None,
        }
    }
}
