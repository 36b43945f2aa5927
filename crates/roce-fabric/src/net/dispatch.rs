//! The fabric's event loop: what each event does. Links deliver frames to hosts (whose engine
//! handles them) or switches (which classify, admit, mark, queue and pause); free transmitters
//! pick their next frame; hosts fire due timers and are polled for frames when their NIC is free.

use super::fabric::FabricSwitch;
use super::fabric::{Fabric, PfcEvent};
use super::transit::{code, node_rng, Event, Transit};
use crate::switching::port::TxPort;
use crate::switching::stats::Lost;
use crate::switching::switch::{mark_ce, DropReason, MarkPoint};
use crate::{HostId, LinkId, Node, PktId, SwitchId};
use roce_proto::cc::{IntHop, Rate};
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::pfc::{self, PauseRepr, PRIORITIES};

/// Events between two calls of a run's progress callback.
pub const PROGRESS_EVERY: u64 = 1 << 16;

impl<E: Engine> Fabric<E> {
    /// Runs until virtual time `end` (events at `end` included), then sets the clock to `end`.
    pub fn run_until(&mut self, end: Instant) {
        self.run_until_with(end, |_| {});
    }

    /// Like [`Fabric::run_until`], calling `progress(now)` every [`PROGRESS_EVERY`] events.
    pub fn run_until_with(&mut self, end: Instant, progress: impl FnMut(Instant)) {
        self.prepare();
        self.run_before(end + Duration::NANOSECOND, progress);
        self.w.now = self.w.now.max(end);
    }

    /// Computes routes and starts the hosts, once.
    pub(super) fn prepare(&mut self) {
        if !self.routed {
            self.compute_routes();
        }
        if !self.started {
            self.started = true;
            for h in 0..self.hosts.len() {
                self.w.origin = code(Node::Host(HostId(h)));
                self.service_host(h);
            }
        }
    }

    /// Handles the events due before `stop`, earliest (then lowest-keyed) first.
    pub(super) fn run_before(&mut self, stop: Instant, mut progress: impl FnMut(Instant)) {
        self.w.stop = stop;
        while let Some(t) = self.w.queue.peek_time() {
            if t >= stop {
                break;
            }
            let Some((t, key, ev)) = self.w.queue.pop() else {
                break;
            };
            self.w.enter(t, key);
            self.w.origin = ev.target(&self.w.links);
            self.w.prefetch_ahead();
            if self.dispatch(ev) {
                self.w.events += 1;
                if self.w.events % PROGRESS_EVERY == 0 {
                    progress(t);
                }
            }
        }
        self.w.close(stop);
    }

    /// Handles one event; false for stale wake-ups.
    pub(super) fn dispatch(&mut self, ev: Event) -> bool {
        match ev {
            Event::Deliver(l, pkt, epoch) => self.deliver(LinkId(l as usize), pkt, epoch),
            Event::TxDone(node, port) => {
                let node = node.node();
                if let Some(tx) = self.tx_mut(node, port) {
                    tx.busy = false;
                }
                self.kick(node, port);
            }
            Event::HostWake(h) => {
                let h = HostId(h as usize);
                let Some(host) = self.hosts.get_mut(h.0) else {
                    return false;
                };
                if host.wake != Some(self.w.now) {
                    return false;
                }
                host.wake = None;
                self.service_host(h.0);
            }
            Event::PauseEnd(node, port) => {
                let node = node.node();
                if let Some(tx) = self.tx_mut(node, port) {
                    tx.pause_wake = None;
                }
                self.kick(node, port);
            }
            Event::XoffRefresh(s, port, prio) => {
                // Due unless XON went or a later XOFF moved the refresh (a stale wake-up).
                let s = SwitchId(s as usize);
                let prio = usize::from(prio);
                let now = self.w.now;
                let sw = self.switches.get(s.0);
                if sw.is_none_or(|sw| sw.xoff_refresh_at(port, prio) != Some(now)) {
                    return false;
                }
                self.send_pfc(s, port, prio, true);
            }
            Event::Watchdog(s, port, prio) => {
                return self.watchdog_check(SwitchId(s as usize), port, usize::from(prio));
            }
            Event::PfcStorm(h, prio, step) => return self.pfc_storm(h as usize, prio, step),
            Event::LinkState(l, up) => return self.link_state(LinkId(l as usize), up),
            Event::LinkDetect(l, up) => return self.link_detect(LinkId(l as usize), up),
            Event::Reconverge => self.reconverge(),
            Event::SwitchFlush(s) => self.flush_switch(SwitchId(s as usize)),
            Event::Drain(s, drained) => self.drain(SwitchId(s as usize), drained),
            Event::Sample => {
                self.note_deadlock();
                if let Some(mut rec) = self.recorder.take() {
                    rec.sample(
                        self.now(),
                        &self.flow_meter.progress,
                        |s, p| self.queue_bytes(s, p),
                        |h| self.engine(h),
                    );
                    if let Some(t) = rec.telemetry.as_mut() {
                        self.sample_telemetry(t);
                    }
                    let idle = self.w.queue.is_empty()
                        && self.w.idle_elsewhere
                        && rec.rows.last().is_some_and(|r| r.flow_gbps.is_empty());
                    if idle {
                        self.sample_idle_until(&mut rec, self.w.stop);
                    }
                    let at = self.now() + rec.interval;
                    self.recorder = Some(rec);
                    self.w.schedule(at, Event::Sample);
                }
            }
        }
        true
    }

    pub(super) fn kick(&mut self, node: Node, port: u16) {
        match node {
            Node::Host(h) => self.service_host(h.0),
            Node::Switch(s) => self.switch_tx(s, port),
        }
    }

    /// Hands `pkt`, sent on `l` in the link's epoch `epoch`, to the link's far end.
    pub(super) fn deliver(&mut self, l: LinkId, pkt: PktId, epoch: u32) {
        let Some(link) = self.w.links.get(l.0) else {
            self.w.pool.release(pkt);
            return;
        };
        let (node, port) = link.to;
        if epoch != link.epoch || !link.up {
            let prio = self.w.pool.prio(pkt);
            let len = self.w.pool.len(pkt);
            self.w.lost.add(len);
            self.count_lost_in_flight(l, prio);
            self.w.pool.release(pkt);
            return;
        }
        self.receive(node, port, pkt);
    }

    pub(super) fn receive(&mut self, node: Node, port: u16, pkt: PktId) {
        let now = self.w.now;
        let Some(slot) = self.w.pool.slot(pkt) else {
            return;
        };
        // Only what every frame needs is copied out; the rest is read where it is used.
        let (prio, fcs_bad) = (usize::from(slot.prio), slot.fcs_bad);
        let dst = slot.dst_host();
        let len = slot.wire_len() as u64;
        if !fcs_bad {
            self.w.capture(node, port, pkt, false);
        }
        let Some(slot) = self.w.pool.slot(pkt) else {
            return;
        };
        let pause = if slot.ethertype == pfc::MAC_CONTROL_ETHERTYPE {
            PauseRepr::parse(slot.head())
        } else {
            None
        };
        let Some(tx) = self.tx_mut(node, port) else {
            self.w.pool.release(pkt);
            return;
        };
        if fcs_bad {
            tx.counters.rx_fcs_errors += 1;
            if let Some(c) = tx.counters.prio.get_mut(prio) {
                c.dropped.fcs_error += 1;
            }
            self.w.pool.release(pkt);
            return;
        }
        if let Some(c) = tx.counters.prio.get_mut(prio) {
            c.rx_packets += 1;
            c.rx_bytes += len;
        }
        if let Some(pause) = pause {
            let watched = match node {
                Node::Switch(s) => self.watched_pause(s, port, &pause),
                Node::Host(_) => false,
            };
            if let Some(tx) = self.tx_mut(node, port).filter(|_| !watched) {
                for (p, q) in pause.quanta.iter().enumerate() {
                    if let Some(q) = *q {
                        tx.apply_pause(p, now, q);
                    }
                }
            }
            if let Some(log) = self.pfc_log.as_mut() {
                let taken = pause.quanta.iter().enumerate();
                log.extend(taken.filter_map(|(p, q)| {
                    q.map(|q| PfcEvent {
                        t_ns: now.as_nanos(),
                        node,
                        port,
                        prio: p as u8,
                        pause: q > 0,
                    })
                }));
                if let Some(j) = self.mode.journal() {
                    j.rx_keys.resize(log.len(), self.w.current);
                }
            }
            self.w.pool.release(pkt);
            self.kick(node, port);
            return;
        }
        match node {
            Node::Host(h) => {
                let t = self.now();
                if let (Some(host), Some(slot)) = (self.hosts.get_mut(h.0), self.w.pool.slot(pkt)) {
                    self.flow_meter
                        .on_rx(h.0, t, slot.ip.as_ref(), slot.bth.as_ref());
                    if let (Some(at), Some(ip), Some(bth)) = (slot.ce_at, &slot.ip, &slot.bth) {
                        if bth.opcode == Opcode::CNP {
                            host.cnp.on_cnp_received(at, t);
                        } else {
                            host.cnp.on_marked(ip.src.key(), at);
                        }
                    }
                    if let Some(sink) = self.int_sink.filter(|_| !slot.int.is_empty()) {
                        sink(&mut host.engine, t, &slot.int);
                    }
                    host.engine
                        .handle_frame(t, slot.frame(&mut self.w.unpacked));
                }
                self.w.pool.release(pkt);
                self.service_host(h.0);
            }
            Node::Switch(s) => self.forward(s, port, pkt, dst, prio),
        }
    }

    /// Routes, admits and queues `pkt` (bound for host `dst`) at switch `s`.
    pub(super) fn forward(
        &mut self,
        s: SwitchId,
        ingress: u16,
        pkt: PktId,
        dst: Option<usize>,
        prio: usize,
    ) {
        let Some(sw) = self.switches.get_mut(s.0) else {
            self.w.pool.release(pkt);
            return;
        };
        let slot = self.w.pool.slot(pkt);
        let len = slot.map_or(0, |sl| sl.wire_len() as u64);
        let ip = slot.and_then(|sl| sl.ip.as_ref());
        let egress = ip.and_then(|ip| sw.route(dst?, ip));
        let Some(egress) = egress else {
            self.w.lost.add(len);
            if let Some(c) = sw.counters_mut(ingress, prio) {
                c.drop_for(Lost::Switch(DropReason::NoRoute));
            }
            self.w.pool.release(pkt);
            return;
        };
        // A switch with a watchdog drops what a stormed queue or port would take.
        let stormed = sw.watchdog().map(|w| w.drops_either(ingress, egress, prio));
        if let Some(at) = stormed.flatten() {
            if let Some(c) = sw.counters_mut(at, prio) {
                c.drop_for(Lost::Switch(DropReason::PfcWatchdog));
            }
            self.w.pool.release(pkt);
            return;
        }
        if let Err(why) = sw.admit(ingress, egress, prio, len) {
            tracing::trace!(switch = %sw.name(), ?why, "drop");
            if let Some(c) = sw.counters_mut(egress, prio) {
                c.drop_for(Lost::Switch(why));
            }
            self.w.pool.release(pkt);
            return;
        }
        if sw.config().ecn_at == MarkPoint::Enqueue {
            self.w.maybe_mark(s, sw, pkt, egress, prio);
        }
        let crossed = sw.enqueue_counted(pkt, (ingress, egress), prio, len, self.w.now);
        let watched = stormed.is_some();
        if crossed {
            self.send_pfc(s, ingress, prio, true);
        }
        if watched {
            // Queued behind a pause: the queue may be stuck from now.
            self.watch_queue(s, egress, prio);
        }
        self.switch_tx(s, egress);
    }

    /// Queues a PFC frame (XOFF with the configured quanta, or XON) on `port` for `prio`.
    pub(super) fn send_pfc(&mut self, s: SwitchId, port: u16, prio: usize, xoff: bool) {
        let now = self.w.now;
        let Some(sw) = self.switches.get_mut(s.0) else {
            return;
        };
        let Some(frame) = sw
            .port(port)
            .and_then(|p| sw.pause_frame(p.tx.mac, prio, xoff))
        else {
            return;
        };
        let Some(p) = sw.port_mut(port) else {
            return;
        };
        let pkt = self.w.pool.alloc(&frame);
        p.tx.ctrl.push_back(pkt);
        if let Some(c) = p.tx.counters.prio.get_mut(prio) {
            c.pause_sent += 1;
        }
        // The switch keeps the refresh policy; the event only asks it when the time comes.
        let refresh = xoff.then(|| sw.xoff_sent(port, prio, now));
        if let Some(at) = refresh.flatten() {
            let ev = Event::XoffRefresh(s.0 as u32, port, prio as u8);
            self.w.schedule(at, ev);
        }
        if let Some(rec) = self.recorder.as_mut() {
            rec.on_pfc(now, s, port, prio, xoff);
        } else if let Some(j) = self.mode.journal() {
            j.pauses.push((self.w.current, s, port, prio, xoff));
        }
        self.switch_tx(s, port);
    }

    pub(super) fn switch_tx(&mut self, s: SwitchId, port: u16) {
        let now = self.w.now;
        let Some(sw) = self.switches.get_mut(s.0) else {
            return;
        };
        let Some(p) = sw.port_mut(port) else {
            return;
        };
        if self.w.settle(&mut p.tx, Node::Switch(s), port) {
            // The unscheduled TxDone came and found the port empty: its one trace is the
            // scheduler's idle turn.
            sw.idle(port);
        }
        let Some(p) = sw.port_mut(port) else {
            return;
        };
        if p.tx.busy {
            return;
        }
        if let Some(pkt) = p.tx.ctrl.pop_front() {
            let idle = p.drained();
            let len = self.w.pool.len(pkt);
            self.w
                .transmit(&mut p.tx, (Node::Switch(s), port), (pkt, len), 7, idle);
            return;
        }
        let Some(d) = sw.dequeue(port, now, |tx, prio| tx.is_paused(prio, now)) else {
            if let Some(p) = sw.port_mut(port) {
                let waiting = p.waiting();
                self.w
                    .arm_pause_wake(&mut p.tx, Node::Switch(s), port, waiting);
            }
            return;
        };
        let cfg = sw.config();
        let (ecn_at, int) = (cfg.ecn_at, cfg.int);
        if ecn_at == MarkPoint::Dequeue {
            self.w.maybe_mark(s, sw, d.pkt, port, d.prio);
        }
        if let Some(p) = sw.port_mut(port) {
            if int {
                // HPCC-style in-band telemetry: this hop's queue, byte counter, time and rate.
                let hop = IntHop {
                    qlen_bytes: p.queued_bytes(),
                    tx_bytes: p.tx.counters.prio.iter().map(|c| c.tx_bytes).sum(),
                    ts: now,
                    link_rate: Rate::from_bps(p.tx.rate_bps),
                    // Exact counters; a shim quantizes them to its own units.
                    ..IntHop::default()
                };
                if let Some(slot) = self.w.pool.slot_mut(d.pkt) {
                    // A frame with an INT shim gets the record in its bytes (the endpoint
                    // strips and echoes it); any other frame carries it out of band.
                    if !slot.push_int_hop(&hop.into()) {
                        slot.int.push(hop);
                    }
                }
            }
            // Nothing left to send: the frame's TxDone would find the port empty, so it is
            // left unscheduled unless something is queued before it is due.
            let idle = p.drained();
            let sent = (d.pkt, d.len);
            self.w
                .transmit(&mut p.tx, (Node::Switch(s), port), sent, d.prio, idle);
        }
        if sw.should_resume(d.ingress, d.prio) {
            self.send_pfc(s, d.ingress, d.prio, false);
        }
    }

    /// Lets host `h` fire due timers, transmit if its NIC is free, and re-arms its wake-up.
    pub(super) fn service_host(&mut self, h: usize) {
        let now = self.w.now;
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        if host.engine.poll_timeout().is_some_and(|d| d <= now) {
            host.engine.handle_timeout(now);
        }
        if !host.tx.busy {
            self.host_tx(h);
        }
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        let wake = match host.engine.poll_timeout() {
            None => None,
            Some(d) if d > now => Some(d),
            // Due now but the NIC is busy or blocked: TxDone or PauseEnd will come back here.
            // (The parked slots are read only for a deadline due now.)
            Some(_) if host.tx.busy || host.parked.iter().any(Option::is_some) => None,
            // Due now yet nothing was sent: look again one nanosecond later rather than spin.
            Some(_) => Some(now + Duration::NANOSECOND),
        };
        if wake != host.wake {
            host.wake = wake;
            if let Some(d) = wake {
                self.w.schedule(d, Event::HostWake(h as u32));
            }
        }
    }

    /// Starts the next frame of a free host NIC: control, then parked frames whose priority is
    /// no longer paused, then (only with nothing parked) a fresh frame from the engine.
    /// A host's `TxDone` is always scheduled: it asks the engine, whose answer is not known
    /// beforehand.
    pub(super) fn host_tx(&mut self, h: usize) {
        let now = self.w.now;
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        let node = Node::Host(HostId(h));
        if let Some(pkt) = host.tx.ctrl.pop_front() {
            let len = self.w.pool.len(pkt);
            self.w
                .transmit(&mut host.tx, (node, 0), (pkt, len), 7, false);
            return;
        }
        let mut waiting = 0u8;
        for prio in 0..PRIORITIES {
            if let Some(pkt) = host.parked[prio] {
                if host.tx.is_paused(prio, now) {
                    waiting |= 1 << prio;
                } else {
                    host.parked[prio] = None;
                    let len = self.w.pool.len(pkt);
                    self.w
                        .transmit(&mut host.tx, (node, 0), (pkt, len), prio, false);
                    return;
                }
            }
        }
        if waiting == 0 {
            let Some(len) = host.engine.poll_transmit(now, &mut self.scratch) else {
                return;
            };
            if let (Some(spray), Some(frame)) = (host.spray.as_mut(), self.scratch.get_mut(..len)) {
                spray.apply(now, frame);
            }
            let frame = self.scratch.get(..len).unwrap_or_default();
            let pkt = self.w.pool.alloc(frame);
            // One look at the new slot: its priority, the flow meter and the destination host.
            let mut prio = 0;
            if let Some(slot) = self.w.pool.slot_mut(pkt) {
                prio = usize::from(slot.prio);
                self.flow_meter.on_tx(slot.bth.as_ref());
                let dst = slot.ip.as_ref().map(|ip| ip.dst.key());
                slot.set_dst_host(dst.and_then(|d| self.ip_to_host.get(&d)).copied());
                if slot.bth.is_some_and(|b| b.opcode == Opcode::CNP) {
                    slot.ce_at = dst.and_then(|d| host.cnp.on_cnp_sent(d));
                }
            }
            if !host.tx.is_paused(prio, now) {
                let sent = (pkt, len as u64);
                self.w.transmit(&mut host.tx, (node, 0), sent, prio, false);
                return;
            }
            if let Some(slot) = host.parked.get_mut(prio) {
                *slot = Some(pkt);
            }
            waiting = 1 << prio;
        }
        self.w.arm_pause_wake(&mut host.tx, node, 0, waiting);
    }
}

impl Transit {
    /// Marks an ECT packet CE if `sw`'s RED/step rule for (`egress`, `prio`) says so at the
    /// current queue depth. Only ECT packets draw from the switch's RNG (on the RED ramp), so
    /// marking stays replayable.
    fn maybe_mark(
        &mut self,
        s: SwitchId,
        sw: &mut FabricSwitch,
        pkt: PktId,
        egress: u16,
        prio: usize,
    ) {
        // No chance of a mark (below Kmin): no draw either, so the frame is not read.
        let p = sw.ecn_probability(egress, prio);
        if p <= 0.0 {
            return;
        }
        let rng = node_rng(&mut self.rngs, self.seed, code(Node::Switch(s)));
        let now = self.now;
        let marked = self.pool.slot_mut(pkt).is_some_and(|slot| {
            let (head, ip) = slot.head_and_ip();
            let marked = ip.is_some_and(|ip| mark_ce(p, head, ip, rng));
            if marked {
                slot.ce_at = Some(now);
            }
            marked
        });
        if let Some(c) = sw.counters_mut(egress, prio).filter(|_| marked) {
            c.ecn_marked += 1;
        }
    }

    /// Schedules a wake-up for `tx` (of `node`'s `port`) when the first of the paused
    /// priorities in `waiting` (bit mask) resumes, unless an earlier one is already due.
    fn arm_pause_wake(&mut self, tx: &mut TxPort, node: Node, port: u16, waiting: u8) {
        let Some(t) = tx.earliest_resume(waiting, self.now) else {
            return;
        };
        if tx.pause_wake.is_none_or(|w| t < w) {
            tx.pause_wake = Some(t);
            self.schedule(t, Event::PauseEnd(node.into(), port));
        }
    }
}
