//! The loop over an in-memory port with a small pool and a stingy TX queue.

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::*;
use roce_proto::time::{Duration, Instant};

/// A buffer that counts itself out of and back into its pool.
#[derive(Debug)]
struct TestBuf {
    data: Vec<u8>,
    len: usize,
    out: Rc<Cell<usize>>,
}

impl Drop for TestBuf {
    fn drop(&mut self) {
        self.out.set(self.out.get() - 1);
    }
}

impl FrameBuf for TestBuf {
    fn frame(&self) -> &[u8] {
        self.data.get(..self.len).unwrap_or_default()
    }
    fn frame_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        self.data.get_mut(..len).unwrap_or_default()
    }
    fn room(&self) -> usize {
        self.data.len()
    }
    fn set_frame_len(&mut self, len: usize) -> bool {
        if len > self.data.len() {
            return false;
        }
        self.len = len;
        true
    }
}

/// A port with a pool of `pool` buffers that accepts at most `accept` frames per TX burst.
#[derive(Debug)]
struct TestPort {
    pool: usize,
    out: Rc<Cell<usize>>,
    accept: usize,
    inbound: VecDeque<Vec<u8>>,
    sent: Vec<Vec<u8>>,
}

impl TestPort {
    fn new(pool: usize, accept: usize) -> Self {
        TestPort {
            pool,
            out: Rc::new(Cell::new(0)),
            accept,
            inbound: VecDeque::new(),
            sent: Vec::new(),
        }
    }
}

impl Port for TestPort {
    type Buf = TestBuf;
    fn caps(&self) -> roce_proto::port::PortCaps {
        roce_proto::port::PortCaps {
            mtu: 1500,
            burst: 4,
        }
    }
    fn alloc(&mut self) -> Option<TestBuf> {
        if self.out.get() >= self.pool {
            return None;
        }
        self.out.set(self.out.get() + 1);
        Some(TestBuf {
            data: vec![0; 128],
            len: 0,
            out: self.out.clone(),
        })
    }
    fn rx_burst(&mut self, out: &mut Vec<TestBuf>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some(frame) = self.inbound.pop_front() else {
                break;
            };
            let Some(mut b) = self.alloc() else { break };
            b.data[..frame.len()].copy_from_slice(&frame);
            b.len = frame.len();
            out.push(b);
            n += 1;
        }
        n
    }
    fn tx_burst(&mut self, bufs: &mut Vec<TestBuf>) -> usize {
        let n = bufs.len().min(self.accept);
        for b in bufs.drain(..n) {
            self.sent.push(b.frame().to_vec());
        }
        n
    }
}

/// Echoes every frame back and counts down a frame budget of its own.
#[derive(Debug, Default)]
struct EchoEngine {
    queued: VecDeque<Vec<u8>>,
    to_generate: usize,
    timer: Option<Instant>,
    fired: Vec<Instant>,
}

impl Engine for EchoEngine {
    fn handle_frame(&mut self, _now: Instant, frame: &[u8]) {
        self.queued.push_back(frame.to_vec());
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.fired.push(now);
        self.timer = None;
    }
    fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some(f) = self.queued.pop_front() {
            buf.get_mut(..f.len())?.copy_from_slice(&f);
            return Some(f.len());
        }
        if self.to_generate > 0 {
            self.to_generate -= 1;
            let b = buf.get_mut(..60)?;
            b.fill(self.to_generate as u8);
            return Some(60);
        }
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.timer
    }
}

/// A clock the test moves by hand.
#[derive(Debug, Default)]
struct ManualClock(Cell<u64>);

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.0.get())
    }
}

fn config() -> RuntimeConfig {
    RuntimeConfig {
        burst: 4,
        max_tx_retries: 2,
        pfc_link_bps: None,
    }
}

/// The loop over a [`TestPort`] of `pool` buffers taking `accept` frames a burst, on a clock
/// that stays at zero.
fn runtime(pool: usize, accept: usize) -> Runtime<TestPort, ManualClock> {
    Runtime::new(
        TestPort::new(pool, accept),
        ManualClock::default(),
        config(),
    )
}

impl EchoEngine {
    /// An engine with `frames` frames of its own to send.
    fn generating(frames: usize) -> Self {
        EchoEngine {
            to_generate: frames,
            ..EchoEngine::default()
        }
    }
}

/// [`runtime`] polled `polls` times by an engine with `frames` frames of its own to send.
fn polled(
    (pool, accept): (usize, usize),
    frames: usize,
    polls: usize,
) -> (Runtime<TestPort, ManualClock>, EchoEngine) {
    let mut rt = runtime(pool, accept);
    let mut engine = EchoEngine::generating(frames);
    for _ in 0..polls {
        rt.poll_once(&mut engine);
    }
    (rt, engine)
}

#[test]
fn received_frames_are_handed_to_engine_and_echoed() {
    let mut port = TestPort::new(16, 16);
    port.inbound.extend([vec![1u8; 70], vec![2u8; 80]]);
    let mut rt = Runtime::new(port, ManualClock::default(), config());
    let mut engine = EchoEngine::default();
    assert_eq!(rt.poll_once(&mut engine), 4);
    let c = rt.counters();
    assert_eq!((c.rx_packets, c.rx_bytes, c.rx_bursts), (2, 150, 1));
    assert_eq!((c.tx_packets, c.tx_bytes, c.tx_bursts), (2, 150, 1));
    assert_eq!(rt.port().sent, [vec![1u8; 70], vec![2u8; 80]]);
    assert_eq!(rt.poll_once(&mut engine), 0);
    assert_eq!(rt.counters().empty_polls, 1);
    // Only the spare buffer stays out of the pool.
    assert_eq!(rt.port().out.get(), 1);
}

#[test]
fn partial_tx_bursts_are_retried_in_order() {
    let (mut rt, mut engine) = polled((16, 3), 6, 1);
    assert_eq!((rt.counters().tx_packets, rt.tx_backlog()), (3, 1));
    assert_eq!(rt.counters().tx_retries, 1);
    rt.poll_once(&mut engine);
    rt.poll_once(&mut engine);
    let firsts: Vec<u8> = rt.port().sent.iter().map(|f| f[0]).collect();
    assert_eq!(firsts, [5, 4, 3, 2, 1, 0]);
    assert_eq!(rt.counters().tx_drops, 0);
}

#[test]
fn stuck_tx_backlog_is_dropped_after_max_retries() {
    let (rt, _) = polled((16, 0), 4, 3);
    assert_eq!(rt.counters().tx_drops, 4);
    assert_eq!(rt.counters().tx_retries, 3);
    assert_eq!(rt.tx_backlog(), 0);
    assert_eq!(rt.port().out.get(), 0);
}

#[test]
fn pool_exhaustion_is_counted_not_fatal() {
    let (mut rt, _) = polled((2, 0), 10, 1);
    assert_eq!(rt.counters().alloc_failures, 1);
    assert_eq!(rt.tx_backlog(), 2);
    assert_eq!(rt.discard_backlog(), 2);
    assert_eq!(rt.port().out.get(), 0);
}

#[test]
fn timer_fires_once_when_due() {
    let clock = ManualClock::default();
    let mut rt = Runtime::new(TestPort::new(4, 4), &clock, config());
    let mut engine = EchoEngine {
        timer: Some(Instant::ZERO + Duration::from_micros(5)),
        ..EchoEngine::default()
    };
    rt.poll_once(&mut engine);
    assert!(engine.fired.is_empty());
    clock.0.set(5_000);
    rt.poll_once(&mut engine);
    rt.poll_once(&mut engine);
    assert_eq!(engine.fired, [Instant::from_nanos(5_000)]);
    assert_eq!(rt.counters().timeouts, 1);
}

#[test]
fn run_returns_when_stop_is_set() {
    let stop = AtomicBool::new(true);
    let mut rt = runtime(4, 4);
    assert_eq!(rt.run(&mut EchoEngine::default(), &stop).polls, 0);
}

#[test]
fn a_pfc_pause_holds_its_priority_until_it_ends_and_never_reaches_the_engine() {
    use roce_proto::wire::pfc::PauseRepr;
    let clock = ManualClock::default();
    let mut port = TestPort::new(16, 16);
    let mut xoff = vec![0u8; 60];
    // 1000 quanta at 100 Gbit/s: 5.12 us.
    PauseRepr::single([2; 6], 3, 1000).emit(&mut xoff);
    port.inbound.push_back(xoff);
    let mut rt = Runtime::new(
        port,
        &clock,
        RuntimeConfig {
            pfc_link_bps: Some(100_000_000_000),
            ..config()
        },
    );
    // An IPv4 frame at DSCP 26 (priority 3), then two frames of priority 0.
    let mut rdma = vec![0u8; 60];
    rdma[12..14].copy_from_slice(&[0x08, 0x00]);
    rdma[15] = 26 << 2;
    let mut engine = EchoEngine {
        queued: VecDeque::from([rdma.clone()]),
        to_generate: 2,
        ..EchoEngine::default()
    };
    rt.poll_once(&mut engine);
    let c = rt.counters();
    assert_eq!((c.rx_packets, c.rx_pause_frames), (1, 1));
    assert_eq!(c.tx_pause_holds, 1);
    assert!(rt.port().sent.is_empty(), "the paused frame holds the ring");
    assert_eq!(rt.tx_backlog(), 1);
    assert_eq!(
        engine.queued.len(),
        0,
        "the pause frame is not the engine's"
    );
    clock.0.set(5_119);
    rt.poll_once(&mut engine);
    assert!(rt.port().sent.is_empty());
    clock.0.set(5_120);
    rt.poll_once(&mut engine);
    let firsts: Vec<u8> = rt.port().sent.iter().map(|f| f[15]).collect();
    assert_eq!(
        firsts,
        [26 << 2, 1, 0],
        "the held frame first, then the rest"
    );
    let pause = rt.pause().expect("PFC honoured");
    assert_eq!(pause.frames(3), 1);
    assert_eq!(
        pause.paused(3, Instant::from_nanos(9_000)),
        Duration::from_nanos(5_120)
    );
}

#[test]
fn without_pfc_pause_frames_are_ordinary_frames() {
    use roce_proto::wire::pfc::PauseRepr;
    let mut port = TestPort::new(16, 16);
    let mut xoff = vec![0u8; 60];
    PauseRepr::single([2; 6], 3, 1000).emit(&mut xoff);
    port.inbound.push_back(xoff.clone());
    let mut rt = Runtime::new(port, ManualClock::default(), config());
    let mut engine = EchoEngine::default();
    rt.poll_once(&mut engine);
    assert_eq!(rt.counters().rx_pause_frames, 0);
    assert!(rt.pause().is_none());
    assert_eq!(rt.port().sent, [xoff], "echoed by the engine");
}
