//! Fault injection on a command's own DPDK port, both ways: outgoing frames go through
//! [`FaultPort`] (roce's middleware), incoming ones through [`Inbound`], which hands what the
//! port receives to a second `FaultPort` whose "wire" is the host. Not here: the knobs' parsing
//! ([`super::PortArgs`]).

use std::cell::RefCell;
use std::rc::Rc;

use roce_proto::fault::{FaultConfig, FaultCounters, FaultPort};
use roce_proto::port::{FrameBuf, Port, PortCaps};

/// What [`Sink`] and [`Inbound`] share: frames the injector let through, and spare buffers it
/// may fill with duplicates.
#[derive(Debug)]
struct Shared<B> {
    passed: Vec<B>,
    spares: Vec<B>,
}

/// The "wire" behind the inbound injector: what it transmits lands in `passed`.
#[derive(Debug)]
struct Sink<B> {
    shared: Rc<RefCell<Shared<B>>>,
    caps: PortCaps,
}

impl<B: FrameBuf> Port for Sink<B> {
    type Buf = B;

    fn caps(&self) -> PortCaps {
        self.caps
    }

    fn alloc(&mut self) -> Option<B> {
        self.shared.borrow_mut().spares.pop()
    }

    fn rx_burst(&mut self, _out: &mut Vec<B>, _max: usize) -> usize {
        0
    }

    fn tx_burst(&mut self, bufs: &mut Vec<B>) -> usize {
        let n = bufs.len();
        self.shared.borrow_mut().passed.append(bufs);
        n
    }
}

/// A port whose received frames go through roce's [`FaultPort`] (dropped, duplicated, held
/// back or corrupted at the configured fractions, seeded) before the host sees them.
#[derive(Debug)]
pub struct Inbound<P: Port> {
    inner: P,
    faults: FaultPort<Sink<P::Buf>>,
    shared: Rc<RefCell<Shared<P::Buf>>>,
    duplicates: bool,
    scratch: Vec<P::Buf>,
}

impl<P: Port> Inbound<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, cfg: FaultConfig, seed: u64) -> Self {
        let shared = Rc::new(RefCell::new(Shared {
            passed: Vec::new(),
            spares: Vec::new(),
        }));
        let sink = Sink {
            shared: shared.clone(),
            caps: inner.caps(),
        };
        Inbound {
            inner,
            faults: FaultPort::new(sink, cfg, seed),
            shared,
            duplicates: cfg.duplicate > 0.0,
            scratch: Vec::new(),
        }
    }

    /// What was done to received frames.
    pub fn counters(&self) -> FaultCounters {
        self.faults.counters()
    }
}

impl<P: Port> Port for Inbound<P> {
    type Buf = P::Buf;
    roce_proto::port_caps_and_pool_of!(inner);

    fn rx_burst(&mut self, out: &mut Vec<P::Buf>, max: usize) -> usize {
        let mut fresh = std::mem::take(&mut self.scratch);
        let n = self.inner.rx_burst(&mut fresh, max);
        if self.duplicates {
            // Enough spare buffers for every frame to be duplicated.
            let mut sh = self.shared.borrow_mut();
            while sh.spares.len() < n {
                match self.inner.alloc() {
                    Some(b) => sh.spares.push(b),
                    None => break,
                }
            }
        }
        if n > 0 {
            self.faults.tx_burst(&mut fresh);
        } else {
            // A quiet link still lets held-back frames out.
            self.faults.rx_burst(&mut fresh, 0);
        }
        self.scratch = fresh;
        let mut sh = self.shared.borrow_mut();
        let passed = sh.passed.len();
        out.append(&mut sh.passed);
        passed
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

/// One line on what the injector did: `faults: tx dropped=N/M ... rx dropped=N/M ...`
/// (`refused`: frames the port itself did not take, lost and not counted as sent).
pub fn summary<P: Port>(port: &Faulty<P>) -> String {
    let line = |c: FaultCounters| {
        format!(
            "dropped={}/{} duplicated={} reordered={} corrupted={} refused={}",
            c.dropped, c.frames, c.duplicated, c.reordered, c.corrupted, c.refused
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
    use roce_proto::loopback::{loopback_pair, LoopbackPort};

    fn send_frames(tx: &mut LoopbackPort, n: usize) {
        let mut bufs = Vec::new();
        for i in 0..n {
            let mut buf = tx.alloc().unwrap();
            assert!(buf.set_frame_len(60));
            buf.frame_mut()[0] = i as u8;
            bufs.push(buf);
        }
        assert_eq!(tx.tx_burst(&mut bufs), n);
    }

    #[test]
    fn inbound_duplication_of_one_delivers_every_frame_twice_in_order() {
        let (mut tx, b) = loopback_pair(1500, 64);
        let mut rx = Inbound::new(
            b,
            FaultConfig {
                duplicate: 1.0,
                ..FaultConfig::default()
            },
            7,
        );
        send_frames(&mut tx, 3);
        let mut out = Vec::new();
        assert_eq!(rx.rx_burst(&mut out, 32), 6);
        let firsts: Vec<u8> = out.iter().map(|b| b.frame()[0]).collect();
        assert_eq!(firsts, vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(rx.counters().duplicated, 3);
    }

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
        send_frames(&mut tx, 5);
        let mut out = Vec::new();
        assert_eq!(rx.rx_burst(&mut out, 32), 0);
        assert_eq!(rx.counters().dropped, 5);
        assert_eq!(rx.counters().frames, 5);
    }
}
