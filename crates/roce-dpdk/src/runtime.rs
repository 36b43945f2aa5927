//! The run-to-completion loop: RX burst → engine → timers → engine's transmits → TX burst, on one
//! thread, over any [`Port`] and [`Clock`]. It owns no protocol logic (that is the [`Engine`]) and
//! allocates nothing in steady state (the burst vectors are reused).

use std::sync::atomic::{AtomicBool, Ordering};

use smart_default::SmartDefault;

use crate::clock::Clock;
use roce_proto::pause::PauseState;
use roce_proto::port::{FrameBuf, Port};
use roce_proto::wire::pfc::priority;

pub use roce_proto::engine::Engine;

/// Loop tuning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, SmartDefault)]
pub struct RuntimeConfig {
    /// Frames per RX and TX burst.
    #[default(roce_proto::limits::BURST_SIZE)]
    pub burst: usize,
    /// Polls a TX backlog may be retried before its frames are dropped.
    #[default(64)]
    pub max_tx_retries: u32,
    /// Honour received 802.1Qbb PFC frames, counting their quanta at this link rate (bit/s):
    /// they go to the port's pause state, not the engine, and a frame whose priority is paused
    /// waits (and the engine is not asked for more) until the pause ends. `None`: pause frames
    /// reach the engine like any other frame.
    pub pfc_link_bps: Option<u64>,
}

/// What the loop did, for humans and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Polls of the loop.
    pub polls: u64,
    /// Frames received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// RX bursts that returned at least one frame.
    pub rx_bursts: u64,
    /// Polls whose RX burst was empty.
    pub empty_polls: u64,
    /// Frames the port accepted for sending.
    pub tx_packets: u64,
    /// Bytes the port accepted for sending.
    pub tx_bytes: u64,
    /// TX bursts that sent at least one frame.
    pub tx_bursts: u64,
    /// Polls that left frames unsent for the next poll.
    pub tx_retries: u64,
    /// Frames dropped after `max_tx_retries` polls without progress.
    pub tx_drops: u64,
    /// Buffer allocations that failed (pool exhausted).
    pub alloc_failures: u64,
    /// Frames the engine produced that did not fit the buffer (dropped).
    pub oversize: u64,
    /// Calls to [`Engine::handle_timeout`].
    pub timeouts: u64,
    /// PFC frames received and honoured (with [`RuntimeConfig::pfc_link_bps`]).
    pub rx_pause_frames: u64,
    /// Times a frame had to wait for its priority's pause to end.
    pub tx_pause_holds: u64,
}

/// The loop's state: a port, a clock, reusable burst vectors and counters.
#[derive(Debug)]
pub struct Runtime<P: Port, C: Clock> {
    port: P,
    clock: C,
    config: RuntimeConfig,
    rx: Vec<P::Buf>,
    tx: Vec<P::Buf>,
    spare: Option<P::Buf>,
    stalled_polls: u32,
    counters: Counters,
    pause: Option<PauseState>,
    /// A frame whose priority was paused when the engine produced it.
    held: Option<P::Buf>,
}

impl<P: Port, C: Clock> Runtime<P, C> {
    /// A loop over `port` reading `clock`.
    pub fn new(port: P, clock: C, config: RuntimeConfig) -> Self {
        let burst = config.burst.max(1);
        Runtime {
            port,
            clock,
            config: RuntimeConfig { burst, ..config },
            rx: Vec::with_capacity(burst),
            tx: Vec::with_capacity(burst),
            spare: None,
            stalled_polls: 0,
            counters: Counters::default(),
            pause: config.pfc_link_bps.map(PauseState::new),
            held: None,
        }
    }

    /// What received PFC frames did to the transmitter (with [`RuntimeConfig::pfc_link_bps`]).
    pub fn pause(&self) -> Option<&PauseState> {
        self.pause.as_ref()
    }

    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The port.
    pub fn port(&self) -> &P {
        &self.port
    }

    /// The port, mutably.
    pub fn port_mut(&mut self) -> &mut P {
        &mut self.port
    }

    /// The port back (the TX backlog, a held frame and the spare buffer go back to the pool).
    pub fn into_port(self) -> P {
        self.port
    }

    /// Frames waiting for TX (the port refused them so far, or a pause holds them).
    pub fn tx_backlog(&self) -> usize {
        self.tx.len() + usize::from(self.held.is_some())
    }

    /// Runs [`Runtime::poll_once`] until `stop` is set, then flushes what it can.
    pub fn run<E: Engine>(&mut self, engine: &mut E, stop: &AtomicBool) -> Counters {
        while !stop.load(Ordering::Relaxed) {
            self.poll_once(engine);
        }
        self.counters
    }

    /// Drops the TX backlog and the spare buffer, returning them to the pool; returns how many
    /// frames were dropped (counted in `tx_drops`).
    pub fn discard_backlog(&mut self) -> usize {
        let n = self.tx.len() + usize::from(self.held.is_some());
        self.counters.tx_drops += n as u64;
        self.tx.clear();
        self.held = None;
        self.spare = None;
        n
    }

    /// One iteration: receive a burst, feed it, fire timers, collect transmits, send a burst.
    /// Returns the number of frames received plus sent.
    pub fn poll_once<E: Engine>(&mut self, engine: &mut E) -> usize {
        self.counters.polls += 1;
        let now = self.clock.now();
        let burst = self.config.burst;

        let received = self.port.rx_burst(&mut self.rx, burst);
        if received == 0 {
            self.counters.empty_polls += 1;
        } else {
            self.counters.rx_bursts += 1;
            for buf in &self.rx {
                let frame = buf.frame();
                self.counters.rx_packets += 1;
                self.counters.rx_bytes += frame.len() as u64;
                if let Some(p) = self.pause.as_mut() {
                    if p.on_frame(now, frame) {
                        self.counters.rx_pause_frames += 1;
                        continue;
                    }
                }
                engine.handle_frame(now, frame);
            }
            self.rx.clear();
        }

        if engine.poll_timeout().is_some_and(|t| t <= now) {
            self.counters.timeouts += 1;
            engine.handle_timeout(now);
        }

        // A held frame goes first once its priority may send; while it may not, nothing else
        // is asked of the engine (its frames would queue behind it on a real NIC's ring).
        let mut held = false;
        if let (Some(buf), Some(p)) = (self.held.take(), self.pause.as_ref()) {
            if p.is_paused(priority(buf.frame()), now) {
                self.held = Some(buf);
                held = true;
            } else {
                self.tx.push(buf);
            }
        }
        while !held && self.tx.len() < burst {
            let Some(mut buf) = self.spare.take().or_else(|| self.port.alloc()) else {
                self.counters.alloc_failures += 1;
                break;
            };
            let room = buf.room();
            if !buf.set_frame_len(room) {
                self.counters.oversize += 1;
                break;
            }
            match engine.poll_transmit(now, buf.frame_mut()) {
                Some(len) if buf.set_frame_len(len) => {
                    if self
                        .pause
                        .as_ref()
                        .is_some_and(|p| p.is_paused(priority(buf.frame()), now))
                    {
                        self.counters.tx_pause_holds += 1;
                        self.held = Some(buf);
                        break;
                    }
                    self.tx.push(buf)
                }
                Some(_) => self.counters.oversize += 1,
                None => {
                    self.spare = Some(buf);
                    break;
                }
            }
        }

        let mut sent = 0;
        if !self.tx.is_empty() {
            let bytes_before: u64 = self.tx.iter().map(|b| b.frame().len() as u64).sum();
            sent = self.port.tx_burst(&mut self.tx);
            let bytes_after: u64 = self.tx.iter().map(|b| b.frame().len() as u64).sum();
            self.counters.tx_packets += sent as u64;
            self.counters.tx_bytes += bytes_before - bytes_after;
            if sent > 0 {
                self.counters.tx_bursts += 1;
            }
            if self.tx.is_empty() {
                self.stalled_polls = 0;
            } else {
                self.counters.tx_retries += 1;
                self.stalled_polls = if sent > 0 { 0 } else { self.stalled_polls + 1 };
                if self.stalled_polls > self.config.max_tx_retries {
                    self.stalled_polls = 0;
                    self.counters.tx_drops += self.tx.len() as u64;
                    self.tx.clear();
                }
            }
        }
        received + sent
    }
}

#[cfg(test)]
mod tests;
