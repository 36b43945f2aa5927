//! The fabric's side of the switches' PFC watchdog ([`crate::switching::watchdog`]): it tells a
//! switch's watchdog when a lossless queue may have become stuck, runs the checks it asks for
//! as events of that switch (so a parallel run gives the results of one thread), and carries
//! out its actions; and the `pfc_storm` failure, a host NIC that keeps its link partner paused.
//!
//! Nothing here runs for a switch without a watchdog beyond one `Option` test per packet.

use super::fabric::Fabric;
use super::transit::{Event, StormStep, GLOBAL};
use crate::switching::stats::Lost;
use crate::switching::switch::DropReason;
use crate::switching::watchdog::{Stuck, Verdict};
use crate::{HostId, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::pfc::{self, PauseRepr};

/// The pause time a storming NIC asks for, quanta (the most a frame can).
const STORM_QUANTA: u16 = u16::MAX;

impl<E: Engine> Fabric<E> {
    /// What switch `s`'s watchdog sees of `port`'s queue `prio` now.
    fn stuck(&self, s: SwitchId, port: u16, prio: usize) -> Option<Stuck> {
        let now = self.w.now;
        let sw = self.switches.get(s.0)?;
        let p = sw.port(port)?;
        Some(Stuck {
            paused: p.tx.is_paused(prio, now),
            paused_total: p.tx.paused(prio, now),
            sent: p.tx.counters.prio.get(prio).map_or(0, |c| c.tx_packets),
            queued: p.waiting() & (1 << prio) != 0,
        })
    }

    /// `port`'s queue `prio` at switch `s` may have become stuck (a pause arrived, or a packet
    /// was queued behind one): lets the watchdog start a spell and schedules its check.
    pub(super) fn watch_queue(&mut self, s: SwitchId, port: u16, prio: usize) {
        let now = self.w.now;
        let Some(sw) = self.switches.get(s.0) else {
            return;
        };
        if sw.watchdog().is_none() || !sw.config().pfc_on(prio) {
            return;
        }
        let Some(seen) = self.stuck(s, port, prio).filter(|x| x.paused && x.queued) else {
            return;
        };
        let wd = self.switches.get_mut(s.0).and_then(|sw| sw.watchdog_mut());
        if let Some(at) = wd.and_then(|w| w.watch_queue(port, prio, now, seen)) {
            self.w
                .schedule(at, Event::Watchdog(s.0 as u32, port, prio as u8));
        }
    }

    /// Takes a pause frame at a switch port with a watchdog (false without one: the caller
    /// applies it): pauses for a stormed priority are counted, not obeyed (unless the action
    /// is `alert`); the others apply, and may leave a queue stuck.
    pub(super) fn watched_pause(&mut self, s: SwitchId, port: u16, pause: &PauseRepr) -> bool {
        let now = self.w.now;
        let Some(sw) = self.switches.get_mut(s.0) else {
            return false;
        };
        let Some(wd) = sw.watchdog_mut() else {
            return false;
        };
        let mut ignore = 0u8;
        for (p, q) in pause.quanta.iter().enumerate() {
            if q.is_some() {
                wd.on_pause(port, p, now);
                if wd.ignores_pause(port, p) {
                    ignore |= 1 << p;
                }
            }
        }
        let Some(tx) = sw.port_mut(port).map(|p| &mut p.tx) else {
            return true;
        };
        for (p, q) in pause.quanta.iter().enumerate() {
            match *q {
                Some(_) if ignore & (1 << p) != 0 => tx.count_pause(p),
                Some(q) => tx.apply_pause(p, now, q),
                None => {}
            }
        }
        for (p, q) in pause.quanta.iter().enumerate() {
            if q.is_some_and(|q| q > 0) && ignore & (1 << p) == 0 {
                self.watch_queue(s, port, p);
            }
        }
        true
    }

    /// The watchdog check of switch `s`'s `port`, priority `prio`, due now (false when stale).
    pub(super) fn watchdog_check(&mut self, s: SwitchId, port: u16, prio: usize) -> bool {
        let now = self.w.now;
        let Some(seen) = self.stuck(s, port, prio) else {
            return false;
        };
        let Some(sw) = self.switches.get_mut(s.0) else {
            return false;
        };
        let Some(wd) = sw.watchdog_mut() else {
            return false;
        };
        let action = wd.config().action;
        let ev = Event::Watchdog(s.0 as u32, port, prio as u8);
        match wd.check(port, prio, now, seen) {
            Verdict::Nothing => return false,
            Verdict::Again(at) => self.w.schedule(at, ev),
            Verdict::Restored => {
                tracing::debug!(switch = %sw.name(), port, prio, "pfc storm restored");
                if let Some(c) = sw.counters_mut(port, prio) {
                    c.pfc_wd_restored += 1;
                }
            }
            Verdict::Storm(at) => {
                tracing::debug!(switch = %sw.name(), port, prio, ?action, "pfc storm detected");
                if let Some(c) = sw.counters_mut(port, prio) {
                    c.pfc_wd_storms += 1;
                }
                self.w.schedule(at, ev);
                self.mitigate(s, port, prio);
            }
        }
        true
    }

    /// Carries out the watchdog's action on a queue just declared stormed: `drop` drops what
    /// it holds (XON goes to the ingress ports that fall below their threshold), `drop` and
    /// `forward` stop honouring the pause standing on it; `alert` does nothing.
    fn mitigate(&mut self, s: SwitchId, port: u16, prio: usize) {
        let now = self.w.now;
        let Some(sw) = self.switches.get_mut(s.0) else {
            return;
        };
        let Some(wd) = sw.watchdog() else {
            return;
        };
        let (ignores, drops) = (wd.ignores_pause(port, prio), wd.drops(port, prio));
        if !ignores {
            return;
        }
        if let Some(p) = sw.port_mut(port) {
            p.tx.lift_pause(prio, now);
        }
        let dropped = if drops {
            sw.drop_queue(port, prio)
        } else {
            Vec::new()
        };
        let mut ingress: Vec<u16> = Vec::new();
        for d in dropped {
            if let Some(c) = sw.counters_mut(port, prio) {
                c.drop_for(Lost::Switch(DropReason::PfcWatchdog));
            }
            self.w.pool.release(d.pkt);
            if !ingress.contains(&d.ingress) {
                ingress.push(d.ingress);
            }
        }
        for i in ingress {
            let resume = self
                .switches
                .get_mut(s.0)
                .is_some_and(|sw| sw.should_resume(i, prio));
            if resume {
                self.send_pfc(s, i, prio, false);
            }
        }
        self.switch_tx(s, port);
    }

    /// Makes `host`'s NIC send PFC XOFF for `prio` from `at` to `until` (re-sent at half its
    /// pause time, as a NIC whose receive side is stuck does; XON at `until`): a PFC storm
    /// on the switch port it hangs off. One storm at a time per host.
    pub fn schedule_pfc_storm(&mut self, host: HostId, prio: u8, at: Instant, until: Instant) {
        self.w.origin = GLOBAL;
        let h = host.0 as u32;
        self.w
            .schedule(at, Event::PfcStorm(h, prio, StormStep::Start));
        let stop = Event::PfcStorm(h, prio, StormStep::Stop);
        self.w.schedule(until.max(at), stop);
    }

    /// A storm event of host `h`: starts the storm, re-sends its XOFF, or ends it with XON.
    /// False for a stale refresh, or a start while a storm runs.
    pub(super) fn pfc_storm(&mut self, h: usize, prio: u8, step: StormStep) -> bool {
        let now = self.w.now;
        let Some(host) = self.hosts.get_mut(h) else {
            return false;
        };
        let quanta = match (step, host.storm) {
            (StormStep::Start, None) => STORM_QUANTA,
            (StormStep::Refresh, Some((p, next))) if p == prio && next == now => STORM_QUANTA,
            (StormStep::Stop, Some((p, _))) if p == prio => 0,
            _ => return false,
        };
        let mut frame = [0u8; pfc::FRAME_LEN];
        if PauseRepr::single(host.tx.mac, prio, quanta)
            .emit(&mut frame)
            .is_none()
        {
            return false;
        }
        let pkt = self.w.pool.alloc(&frame);
        host.tx.ctrl.push_back(pkt);
        if let Some(c) = host.tx.counters.prio.get_mut(usize::from(prio)) {
            c.pause_sent += 1;
        }
        host.storm = None;
        if quanta > 0 {
            let half = pfc::quanta_to_nanos(quanta, host.tx.rate_bps) / 2;
            let next = now + Duration::from_nanos(half.max(1));
            host.storm = Some((prio, next));
            self.w
                .schedule(next, Event::PfcStorm(h as u32, prio, StormStep::Refresh));
        }
        self.service_host(h);
        true
    }
}
