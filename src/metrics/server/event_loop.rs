//! The metrics endpoint's one I/O thread: a `mio` poll over the listener, at most
//! [`Limits::max_connections`] clients and a waker for the collector's expositions. It accepts
//! at most [`Limits::accept_rate`] connections a second, closes the least useful client when
//! full, closes every client at its deadline, and backs off when the process is out of file
//! descriptors. Not here: one client's protocol ([`super::connection`]).

use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam::channel::{Receiver, Sender, TryRecvError, TrySendError};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use super::connection::{Connection, Next, Phase};
use super::Limits;
use crate::metrics::request::Status;

/// The listener's token.
pub(super) const LISTENER: Token = Token(usize::MAX);
/// The waker's token (the collector has an exposition, or the server is stopping).
pub(super) const WAKER: Token = Token(usize::MAX - 1);

/// How often, at most, running out of file descriptors is logged.
const FD_WARNING_EVERY: Duration = Duration::from_secs(10);

/// Accepts allowed: `burst` at once, refilled at `rate` a second.
struct TokenBucket {
    tokens: f64,
    burst: f64,
    rate: f64,
    at: Instant,
}

impl TokenBucket {
    fn new(rate: u32, burst: u32, now: Instant) -> Self {
        TokenBucket {
            tokens: f64::from(burst.max(1)),
            burst: f64::from(burst.max(1)),
            rate: f64::from(rate.max(1)),
            at: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        self.at = now;
    }

    /// Takes one token if there is one.
    fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    fn give_back(&mut self) {
        self.tokens = (self.tokens + 1.0).min(self.burst);
    }

    /// When the next token comes.
    fn next_at(&self) -> Instant {
        let missing = (1.0 - self.tokens).max(0.0);
        self.at + Duration::from_secs_f64(missing / self.rate)
    }
}

/// The collector's side, as the event loop sees it.
pub(super) struct Collector {
    /// Asks for an exposition (capacity 1: asks coalesce).
    pub want: Sender<()>,
    /// Rendered expositions.
    pub bodies: Receiver<Arc<[u8]>>,
}

/// The loop's state.
pub(super) struct EventLoop {
    pub poll: Poll,
    pub listener: TcpListener,
    pub limits: Limits,
    pub content_type: &'static str,
    pub collector: Collector,
    pub stop: Arc<AtomicBool>,
    slots: Vec<Option<Connection>>,
    free: Vec<usize>,
    serial: u64,
    bucket: TokenBucket,
    /// The listener may have connections waiting (it was readable and not drained).
    accept_pending: bool,
    /// No accepting before this (out of tokens, or out of file descriptors).
    accept_after: Instant,
    /// The earliest deadline of any connection (a sweep is due then).
    next_sweep: Option<Instant>,
    /// An exposition was asked for and has not come.
    asked: bool,
    /// The collector is gone (it panicked): GETs get 503.
    collector_gone: bool,
    fd_warned: Option<Instant>,
}

impl EventLoop {
    /// A loop over `listener` (registered with `poll` under [`LISTENER`]).
    pub fn new(
        poll: Poll,
        listener: TcpListener,
        limits: Limits,
        content_type: &'static str,
        collector: Collector,
        stop: Arc<AtomicBool>,
    ) -> Self {
        let now = Instant::now();
        let n = limits.max_connections.max(1);
        EventLoop {
            poll,
            listener,
            content_type,
            collector,
            stop,
            slots: (0..n).map(|_| None).collect(),
            free: (0..n).rev().collect(),
            serial: 0,
            bucket: TokenBucket::new(limits.accept_rate, limits.accept_burst, now),
            limits,
            accept_pending: true,
            accept_after: now,
            next_sweep: None,
            asked: false,
            collector_gone: false,
            fd_warned: None,
        }
    }

    /// Runs until the stop flag is raised (and the waker woken).
    pub fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        while !self.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let mut wake = self.next_sweep;
            if self.accept_pending {
                wake = Some(wake.map_or(self.accept_after, |w| w.min(self.accept_after)));
            }
            let timeout = wake.map(|w| w.saturating_duration_since(now));
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != ErrorKind::Interrupted {
                    tracing::warn!(error = %e, "metrics endpoint: poll failed");
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            let now = Instant::now();
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept_pending = true,
                    WAKER => self.deliver(now),
                    Token(i) => self.advance(i, now),
                }
            }
            if self.accept_pending && now >= self.accept_after {
                self.accept(now);
            }
            if self.next_sweep.is_some_and(|t| now >= t) {
                self.sweep(now);
            }
        }
    }

    /// Accepts while the listener has connections, tokens last and descriptors remain. Out of
    /// descriptors (or buffers), it closes the least useful client and tries once more; if that
    /// fails too, it pauses accepting for [`Limits::accept_backoff`].
    fn accept(&mut self, now: Instant) {
        let mut made_room = false;
        loop {
            if !self.bucket.take(now) {
                self.accept_after = self.bucket.next_at();
                return;
            }
            let e = match self.listener.accept() {
                Ok((stream, _)) => {
                    made_room = false;
                    self.admit(stream, now);
                    continue;
                }
                Err(e) => e,
            };
            self.bucket.give_back();
            match e.kind() {
                ErrorKind::WouldBlock => {
                    self.accept_pending = false;
                    return;
                }
                ErrorKind::Interrupted | ErrorKind::ConnectionAborted => continue,
                _ => {
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM.
                    if self
                        .fd_warned
                        .is_none_or(|t| now.duration_since(t) >= FD_WARNING_EVERY)
                    {
                        tracing::warn!(error = %e, open = self.open(), "metrics endpoint: accept failed; closing the oldest client");
                        self.fd_warned = Some(now);
                    }
                    if !made_room && self.open() > 0 {
                        self.evict();
                        made_room = true;
                        continue;
                    }
                    self.accept_after = now + self.limits.accept_backoff;
                    return;
                }
            }
        }
    }

    /// How many clients are open.
    fn open(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Takes `stream` in, closing the least useful client if full.
    fn admit(&mut self, mut stream: TcpStream, now: Instant) {
        if self.free.is_empty() {
            self.evict();
        }
        let Some(i) = self.free.pop() else {
            return;
        };
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            tracing::debug!(error = %e, "metrics endpoint: cannot register a client");
            self.free.push(i);
            return;
        }
        self.serial += 1;
        let c = Connection::new(stream, self.serial, now, &self.limits);
        self.next_sweep = Some(self.next_sweep.map_or(c.deadline, |t| t.min(c.deadline)));
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = Some(c);
        }
    }

    /// Closes the client that is least useful to keep ([`Connection::eviction_rank`]).
    fn evict(&mut self) {
        let victim = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((c.as_ref()?.eviction_rank(), i)))
            .min()
            .map(|(_, i)| i);
        if let Some(i) = victim {
            tracing::debug!(slot = i, "metrics endpoint full: closing a client");
            self.close(i);
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(mut c) = self.slots.get_mut(i).and_then(Option::take) {
            let _ = self.poll.registry().deregister(&mut c.stream);
            self.free.push(i);
        }
    }

    /// Moves client `i` on after readiness (or a change of phase).
    fn advance(&mut self, i: usize, now: Instant) {
        let Some(c) = self.slots.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        match c.advance(now, &self.limits, self.content_type) {
            Next::Socket => {}
            Next::Close => self.close(i),
            Next::Exposition => self.ask(now),
        }
        if let Some(c) = self.slots.get(i).and_then(Option::as_ref) {
            let d = c.deadline;
            self.next_sweep = Some(self.next_sweep.map_or(d, |t| t.min(d)));
        }
    }

    /// Asks the collector for an exposition, unless one is coming.
    fn ask(&mut self, now: Instant) {
        if self.collector_gone {
            self.answer_waiting(None, now);
            return;
        }
        if !self.asked {
            match self.collector.want.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) => self.asked = true,
                Err(TrySendError::Disconnected(())) => {
                    self.collector_gone = true;
                    self.answer_waiting(None, now);
                }
            }
        }
    }

    /// Hands the newest exposition from the collector to every waiting client.
    fn deliver(&mut self, now: Instant) {
        let mut newest = None;
        loop {
            match self.collector.bodies.try_recv() {
                Ok(b) => newest = Some(b),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.collector_gone = true;
                    break;
                }
            }
        }
        if newest.is_some() || self.collector_gone {
            self.asked = false;
            self.answer_waiting(newest, now);
        }
    }

    /// Answers every waiting client with `body` (200), or 503 without one.
    fn answer_waiting(&mut self, body: Option<Arc<[u8]>>, now: Instant) {
        for i in 0..self.slots.len() {
            let Some(c) = self.slots.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            let Phase::Waiting { head_only } = c.phase else {
                continue;
            };
            match &body {
                Some(b) => {
                    let send = (!head_only).then(|| b.clone());
                    c.respond(Status::Ok, self.content_type, send, b.len());
                }
                None => c.respond(Status::Unavailable, self.content_type, None, 0),
            }
            self.advance(i, now);
        }
    }

    /// Closes every client past its deadline and finds the next deadline.
    fn sweep(&mut self, now: Instant) {
        let mut next: Option<Instant> = None;
        for i in 0..self.slots.len() {
            let Some(d) = self
                .slots
                .get(i)
                .and_then(Option::as_ref)
                .map(|c| c.deadline)
            else {
                continue;
            };
            if d <= now {
                self.close(i);
            } else {
                next = Some(next.map_or(d, |t| t.min(d)));
            }
        }
        self.next_sweep = next;
    }
}
