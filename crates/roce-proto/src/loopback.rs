//! In-memory ports: a connected pair of [`Port`]s in one thread, deterministic, with pooled
//! buffers so a steady-state loop allocates nothing; and [`EndpointPair`], a two-endpoint harness
//! on virtual time that drives any pair of ports (plain, fault-injecting, DPDK rings).
//!
//! Not thread-safe by design: both ends live in the caller's thread.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use crate::endpoint::Endpoint;
use crate::port::{FrameBuf, Port, PortCaps};
use crate::time::{Duration, Instant};

/// Free slots, boxed on purpose: a buffer handed out is the box itself (one pointer to move).
#[allow(clippy::vec_box)]
type FreeList = RefCell<Vec<Box<Slot>>>;
type Pool = Rc<FreeList>;

/// The memory behind a [`LoopbackBuf`], kept on the heap so a buffer moves as one pointer:
/// moving a wider struct right after writing it would reload fresh bytes with wide loads (a
/// store-forwarding stall on every frame).
#[derive(Debug)]
struct Slot {
    data: Vec<u8>,
    len: usize,
    /// Weak: the pool holds its free slots, so a strong reference would be a cycle.
    pool: Weak<FreeList>,
}

/// A frame buffer of a loopback port; dropping it returns its memory to the pool.
#[derive(Debug)]
pub struct LoopbackBuf {
    /// Always `Some` until dropped.
    slot: Option<Box<Slot>>,
}

impl FrameBuf for LoopbackBuf {
    fn frame(&self) -> &[u8] {
        self.slot
            .as_ref()
            .and_then(|s| s.data.get(..s.len))
            .unwrap_or(&[])
    }
    fn frame_mut(&mut self) -> &mut [u8] {
        match self.slot.as_mut() {
            Some(s) => {
                let len = s.len;
                s.data.get_mut(..len).unwrap_or(&mut [])
            }
            None => &mut [],
        }
    }
    fn room(&self) -> usize {
        self.slot.as_ref().map_or(0, |s| s.data.len())
    }
    fn set_frame_len(&mut self, len: usize) -> bool {
        match self.slot.as_mut() {
            Some(s) if len <= s.data.len() => {
                s.len = len;
                true
            }
            _ => false,
        }
    }
}

impl Drop for LoopbackBuf {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            if let Some(pool) = slot.pool.upgrade() {
                if let Ok(mut free) = pool.try_borrow_mut() {
                    free.push(slot);
                }
            }
        }
    }
}

type Queue = Rc<RefCell<VecDeque<LoopbackBuf>>>;

/// One end of an in-memory link.
#[derive(Debug)]
pub struct LoopbackPort {
    rx: Queue,
    peer_rx: Queue,
    pool: Pool,
    caps: PortCaps,
    frame_room: usize,
    queue_limit: usize,
}

/// Two connected ports: what one sends, the other receives, in order.
pub fn loopback_pair(mtu: usize, queue_limit: usize) -> (LoopbackPort, LoopbackPort) {
    let qa: Queue = Rc::default();
    let qb: Queue = Rc::default();
    let pool: Pool = Rc::default();
    let caps = PortCaps {
        mtu,
        burst: crate::limits::BURST_SIZE,
    };
    let frame_room = mtu + 18;
    let a = LoopbackPort {
        rx: qa.clone(),
        peer_rx: qb.clone(),
        pool: pool.clone(),
        caps,
        frame_room,
        queue_limit,
    };
    let b = LoopbackPort {
        rx: qb,
        peer_rx: qa,
        pool,
        caps,
        frame_room,
        queue_limit,
    };
    (a, b)
}

impl LoopbackPort {
    /// Frames waiting to be received on this end.
    pub fn pending(&self) -> usize {
        self.rx.borrow().len()
    }
}

impl Port for LoopbackPort {
    type Buf = LoopbackBuf;

    fn caps(&self) -> PortCaps {
        self.caps
    }

    #[inline]
    fn alloc(&mut self) -> Option<LoopbackBuf> {
        let popped = self.pool.borrow_mut().pop();
        let mut slot = popped.unwrap_or_else(|| {
            Box::new(Slot {
                data: Vec::new(),
                len: 0,
                pool: Rc::downgrade(&self.pool),
            })
        });
        if slot.data.len() < self.frame_room {
            slot.data.resize(self.frame_room, 0);
        }
        slot.len = 0;
        Some(LoopbackBuf { slot: Some(slot) })
    }

    fn rx_burst(&mut self, out: &mut Vec<LoopbackBuf>, max: usize) -> usize {
        let mut q = self.rx.borrow_mut();
        let n = max.min(q.len());
        out.reserve(n);
        for _ in 0..n {
            if let Some(buf) = q.pop_front() {
                out.push(buf);
            }
        }
        n
    }

    fn tx_burst(&mut self, bufs: &mut Vec<LoopbackBuf>) -> usize {
        let mut q = self.peer_rx.borrow_mut();
        let n = bufs.len().min(self.queue_limit.saturating_sub(q.len()));
        q.extend(bufs.drain(..n));
        n
    }
}

/// Two endpoints joined by two ports, run on virtual time: frames move in bursts, and when
/// nothing moves the clock jumps to the next deadline (quinn-proto's `Pair`, for RoCE).
#[derive(Debug)]
pub struct EndpointPair<P: Port> {
    /// Endpoint A (sends through `port_a`).
    pub a: Endpoint,
    /// Endpoint B (sends through `port_b`).
    pub b: Endpoint,
    /// A's port.
    pub port_a: P,
    /// B's port.
    pub port_b: P,
    /// Virtual time now.
    pub now: Instant,
    /// Time that passes per round in which frames moved.
    pub tick: Duration,
    scratch: Vec<P::Buf>,
}

impl<P: Port> EndpointPair<P> {
    /// Joins `a` and `b` (A sends on `port_a`, whose peer is `port_b`).
    pub fn new(a: Endpoint, b: Endpoint, port_a: P, port_b: P) -> Self {
        EndpointPair {
            a,
            b,
            port_a,
            port_b,
            now: Instant::ZERO,
            tick: Duration::from_micros(1),
            scratch: Vec::with_capacity(crate::limits::BURST_SIZE),
        }
    }

    fn transmit(ep: &mut Endpoint, port: &mut P, now: Instant, scratch: &mut Vec<P::Buf>) -> usize {
        let burst = port.caps().burst.max(1);
        while scratch.len() < burst {
            let Some(buf) = port.alloc() else { break };
            // Filled where it stays: moving a buffer just after setting its length would reload
            // the fresh bytes with wide loads (a store-forwarding stall).
            scratch.push(buf);
            let Some(buf) = scratch.last_mut() else { break };
            let room = buf.room();
            buf.set_frame_len(room);
            match ep.poll_transmit(now, buf.frame_mut()) {
                Some(n) => {
                    buf.set_frame_len(n);
                }
                None => {
                    scratch.pop();
                    break;
                }
            }
        }
        let n = scratch.len();
        port.tx_burst(scratch);
        scratch.clear();
        n
    }

    fn receive(ep: &mut Endpoint, port: &mut P, now: Instant, scratch: &mut Vec<P::Buf>) -> usize {
        let burst = port.caps().burst.max(1);
        let n = port.rx_burst(scratch, burst);
        for buf in scratch.drain(..) {
            ep.handle_frame(now, buf.frame());
        }
        n
    }

    /// One round: due timers fire, each side sends a burst, each side receives a burst.
    /// Returns how many frames moved.
    pub fn step(&mut self) -> usize {
        self.a.handle_timeout(self.now);
        self.b.handle_timeout(self.now);
        let mut moved = Self::transmit(&mut self.a, &mut self.port_a, self.now, &mut self.scratch);
        moved += Self::transmit(&mut self.b, &mut self.port_b, self.now, &mut self.scratch);
        moved += Self::receive(&mut self.b, &mut self.port_b, self.now, &mut self.scratch);
        moved += Self::receive(&mut self.a, &mut self.port_a, self.now, &mut self.scratch);
        moved
    }

    /// Runs until `done` (given the time and both endpoints) says so (checked after every round) or virtual time passes `deadline`.
    /// Returns `true` when `done` was reached.
    pub fn run_until(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(Instant, &mut Endpoint, &mut Endpoint) -> bool,
    ) -> bool {
        loop {
            let moved = self.step();
            if done(self.now, &mut self.a, &mut self.b) {
                return true;
            }
            if self.now > deadline {
                return false;
            }
            if moved > 0 {
                self.now += self.tick;
                continue;
            }
            let next = [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            self.now = match next {
                Some(t) if t > self.now => t,
                Some(_) => self.now + self.tick,
                // Idle with nothing armed: frames may still sit in a fault injector.
                None => self.now + self.tick,
            };
        }
    }
}
