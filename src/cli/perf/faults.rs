//! Fault injection on a command's own DPDK port, both ways: outgoing frames go through
//! [`FaultPort`] (roce's middleware), incoming ones through [`Inbound`], which applies the same
//! knobs to what the port receives before the host sees it. Not here: the knobs' parsing
//! ([`super::session::PortArgs`]).

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use roce::driver::fault::{FaultConfig, FaultCounters, FaultPort};
use roce::driver::{FrameBuf, Port, PortCaps};

/// A port whose received frames are dropped, duplicated, held back or corrupted at the
/// configured fractions (seeded, so a run can be replayed).
#[derive(Debug)]
pub struct Inbound<P: Port> {
    inner: P,
    cfg: FaultConfig,
    rng: Pcg64,
    held: VecDeque<(P::Buf, u32)>,
    scratch: Vec<P::Buf>,
    counters: FaultCounters,
}

impl<P: Port> Inbound<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, cfg: FaultConfig, seed: u64) -> Self {
        Inbound {
            inner,
            cfg,
            rng: Pcg64::seed_from_u64(seed),
            held: VecDeque::new(),
            scratch: Vec::new(),
            counters: FaultCounters::default(),
        }
    }

    /// What was done to received frames.
    pub fn counters(&self) -> FaultCounters {
        self.counters
    }

    fn hit(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p.min(1.0))
    }
}

impl<P: Port> Port for Inbound<P> {
    type Buf = P::Buf;

    fn caps(&self) -> PortCaps {
        self.inner.caps()
    }

    fn alloc(&mut self) -> Option<P::Buf> {
        self.inner.alloc()
    }

    fn rx_burst(&mut self, out: &mut Vec<P::Buf>, max: usize) -> usize {
        let mut fresh = std::mem::take(&mut self.scratch);
        self.inner.rx_burst(&mut fresh, max);
        let start = out.len();
        for mut buf in fresh.drain(..) {
            self.counters.frames += 1;
            for (_, n) in self.held.iter_mut() {
                *n = n.saturating_sub(1);
            }
            while self.held.front().is_some_and(|(_, n)| *n == 0) {
                if let Some((b, _)) = self.held.pop_front() {
                    out.push(b);
                }
            }
            if self.hit(self.cfg.loss) {
                self.counters.dropped += 1;
                continue;
            }
            if self.hit(self.cfg.corrupt) {
                let len = buf.frame().len();
                if len > 0 {
                    let at = self.rng.random_range(0..len);
                    if let Some(b) = buf.frame_mut().get_mut(at) {
                        *b ^= 1 << self.rng.random_range(0..8u32);
                    }
                    self.counters.corrupted += 1;
                }
            }
            if self.hit(self.cfg.duplicate) {
                if let Some(mut copy) = self.inner.alloc() {
                    if copy.set_frame_len(buf.frame().len()) {
                        copy.frame_mut().copy_from_slice(buf.frame());
                        out.push(copy);
                        self.counters.duplicated += 1;
                    }
                }
            }
            if self.hit(self.cfg.reorder) {
                let behind = self.rng.random_range(1..=4u32);
                self.held.push_back((buf, behind));
                self.counters.reordered += 1;
                continue;
            }
            out.push(buf);
        }
        self.scratch = fresh;
        // Nothing new arrived: let held frames out anyway, so a quiet link cannot strand them.
        if out.len() == start {
            if let Some((b, _)) = self.held.pop_front() {
                out.push(b);
            }
        }
        out.len() - start
    }

    fn tx_burst(&mut self, bufs: &mut Vec<P::Buf>) -> usize {
        self.inner.tx_burst(bufs)
    }
}

/// The port stack of a command: outgoing faults over incoming faults over the device.
pub type Faulty<P> = FaultPort<Inbound<P>>;

/// Wraps `port` for the fault knobs (each direction gets its own seeded RNG).
pub fn wrap<P: Port>(port: P, cfg: FaultConfig, seed: u64) -> Faulty<P> {
    FaultPort::new(Inbound::new(port, cfg, seed ^ 0x1b0d), cfg, seed)
}

/// One line on what the injector did: `faults: tx dropped=N/M ... rx dropped=N/M ...`.
pub fn summary<P: Port>(port: &Faulty<P>) -> String {
    let line = |c: FaultCounters| {
        format!(
            "dropped={}/{} duplicated={} reordered={} corrupted={}",
            c.dropped, c.frames, c.duplicated, c.reordered, c.corrupted
        )
    };
    format!(
        "faults: tx {} rx {}",
        line(port.counters()),
        line(port.inner().counters())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce::driver::loopback::loopback_pair;

    #[test]
    fn inbound_loss_of_one_drops_every_received_frame() {
        let (a, b) = loopback_pair(1500, 64);
        let mut rx = Inbound::new(
            b,
            FaultConfig {
                loss: 1.0,
                ..FaultConfig::default()
            },
            7,
        );
        let mut tx = a;
        let mut bufs = Vec::new();
        for _ in 0..5 {
            let mut buf = tx.alloc().unwrap();
            assert!(buf.set_frame_len(60));
            bufs.push(buf);
        }
        assert_eq!(tx.tx_burst(&mut bufs), 5);
        let mut out = Vec::new();
        assert_eq!(rx.rx_burst(&mut out, 32), 0);
        assert_eq!(rx.counters().dropped, 5);
        assert_eq!(rx.counters().frames, 5);
    }
}
