//! The `--metrics ADDR:PORT` endpoint: `GET /metrics` (or `HEAD`) answers the newest exposition
//! as OpenMetrics text; other paths are 404, other methods 405, a request with a body 413,
//! malformed heads 400, heads too large 431, and 503 if expositions cannot be had. Every
//! response closes its connection. Not here: what is exposed (`metrics::exposition`) and when
//! the data path snapshots (`MetricsHub` asks it at most once per `MIN_COLLECT_INTERVAL`,
//! 100 ms, however many scrapes come).
//!
//! It is built to be exposed to hostile clients; its bounds ([`Limits::default`]) are:
//! - **Threads: two**, whatever the clients do: one I/O thread (`roce-metrics`, a `mio` event
//!   loop over nonblocking sockets, never a thread per connection) and one collector
//!   (`roce-metrics-collector`) that takes and renders expositions, so a scrape waiting on the
//!   data path (`PUBLISH_WAIT`, 250 ms, at most) never stalls the I/O. Scrapes waiting at the
//!   same time share one rendering, and an unchanged exposition is not rendered again.
//! - **Connections: at most [`MAX_CONNECTIONS`]** open. When full, accepting another closes
//!   the least useful one: one already answered and lingering, else the oldest still sending
//!   its head, else the oldest being answered. A flood of slow connections therefore cannot
//!   lock out a scrape that sends its request at once.
//! - **Accept rate: [`ACCEPT_RATE`] a second** (bursts of [`ACCEPT_BURST`]); above it
//!   connections wait in the kernel's listen backlog ([`LISTEN_BACKLOG`], capped by
//!   `net.core.somaxconn`) and past that the kernel drops their SYNs (the clients retry), so a
//!   connect flood costs this process at most that many accepts a second. A scrape arriving
//!   during such a flood waits its turn in the backlog (at most `LISTEN_BACKLOG / ACCEPT_RATE`,
//!   about a second) or retries its SYN.
//! - **Request head: at most [`MAX_HEAD_BYTES`](super::request::MAX_HEAD_BYTES) bytes and
//!   [`MAX_HEADERS`](super::request::MAX_HEADERS) fields** (else 431), complete within
//!   [`HEAD_DEADLINE`] of the accept (else the connection is closed). One request per
//!   connection: bytes after the head (pipelined requests) are not answered.
//! - **Bodies are never read.** A request announcing one (`Content-Length` above 0,
//!   `Transfer-Encoding`) is answered 405 or 413 from its head alone.
//! - **Response: written within [`WRITE_DEADLINE`]** of the complete head (waiting for the
//!   exposition included), else the connection is closed; the body is shared, never copied per
//!   client.
//! - **Linger: after the response, at most [`LINGER`] and [`LINGER_BYTES`]** of whatever the
//!   client still sends are read and dropped (so it can read the response before the close
//!   resets the connection); then the connection is closed.
//! - **Memory:** a head buffer of [`MAX_HEAD_BYTES`](super::request::MAX_HEAD_BYTES) per
//!   connection (2 MiB at most in all), plus the rendered expositions that unfinished responses
//!   still hold, shared (from a `MetricsHub`, a new one at most every `MIN_COLLECT_INTERVAL`:
//!   at most 101 within a `WRITE_DEADLINE`; the demo's is 40 KB).
//! - **Out of file descriptors** (`EMFILE`, `ENFILE`) or buffers on accept: the least useful
//!   connection is closed (as when full) and the accept tried again; if it fails again,
//!   accepting pauses for [`ACCEPT_BACKOFF`]. The loop goes on.
//! - **No panics:** nothing on the request path unwraps; [`super::request`] is fuzzed.

mod connection;
mod event_loop;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context};
use mio::net::TcpListener;
use mio::{Interest, Poll, Waker};

use event_loop::{Collector, EventLoop, LISTENER, WAKER};

/// The most connections open at once.
pub const MAX_CONNECTIONS: usize = 256;
/// Connections accepted per second, at most (beyond a burst of [`ACCEPT_BURST`]).
pub const ACCEPT_RATE: u32 = 1000;
/// Connections accepted at once before [`ACCEPT_RATE`] applies.
pub const ACCEPT_BURST: u32 = 256;
/// From accept to a complete request head.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// From a complete head to the last byte of the response.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// Connections the kernel holds for us beyond those accepted (capped by `net.core.somaxconn`).
pub const LISTEN_BACKLOG: i32 = 1024;
/// How long a connection lingers after its response.
pub const LINGER: Duration = Duration::from_secs(1);
/// How much a lingering connection reads (and drops) before it is closed.
pub const LINGER_BYTES: usize = 64 * 1024;
/// The pause in accepting after an accept failed for want of descriptors or memory.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The endpoint's bounds ([`Limits::default`]: the constants above; tests shrink them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// [`MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// [`ACCEPT_RATE`].
    pub accept_rate: u32,
    /// [`ACCEPT_BURST`].
    pub accept_burst: u32,
    /// [`HEAD_DEADLINE`].
    pub head_deadline: Duration,
    /// [`WRITE_DEADLINE`].
    pub write_deadline: Duration,
    /// [`LINGER`].
    pub linger: Duration,
    /// [`LINGER_BYTES`].
    pub linger_bytes: usize,
    /// [`ACCEPT_BACKOFF`].
    pub accept_backoff: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: MAX_CONNECTIONS,
            accept_rate: ACCEPT_RATE,
            accept_burst: ACCEPT_BURST,
            head_deadline: HEAD_DEADLINE,
            write_deadline: WRITE_DEADLINE,
            linger: LINGER,
            linger_bytes: LINGER_BYTES,
            accept_backoff: ACCEPT_BACKOFF,
        }
    }
}

/// Takes an exposition and renders it (called on the collector thread, one call at a time; it
/// may block, and should hand back the same bytes while nothing changed).
pub type Render = Box<dyn FnMut() -> Arc<[u8]> + Send>;

/// A running metrics endpoint; stops when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Listens on `addr` (port 0: any free port) and serves `hub`'s expositions.
    #[cfg(feature = "dpdk")]
    pub fn start(addr: SocketAddr, hub: Arc<super::MetricsHub>) -> anyhow::Result<MetricsServer> {
        let mut rendered: Option<(u64, Arc<[u8]>)> = None;
        let render = move || {
            let p = hub.collect_published();
            match &rendered {
                Some((serial, body)) if *serial == p.serial => body.clone(),
                _ => {
                    let body: Arc<[u8]> =
                        super::exposition::render(&p.exposition).into_bytes().into();
                    rendered = Some((p.serial, body.clone()));
                    body
                }
            }
        };
        MetricsServer::serve(
            addr,
            super::exposition::CONTENT_TYPE,
            Limits::default(),
            Box::new(render),
        )
    }

    /// Listens on `addr` and answers `GET /metrics` with what `render` gives, as
    /// `content_type`, within `limits`.
    pub fn serve(
        addr: SocketAddr,
        content_type: &'static str,
        limits: Limits,
        mut render: Render,
    ) -> anyhow::Result<MetricsServer> {
        let mut listener =
            listen(addr).map_err(|e| anyhow!("--metrics {addr}: cannot listen: {e}"))?;
        let addr = listener
            .local_addr()
            .context("the metrics listener's address")?;
        let poll = Poll::new().context("the metrics endpoint's poll")?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .context("registering the metrics listener")?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).context("the metrics waker")?);
        let stop = Arc::new(AtomicBool::new(false));
        let (want_tx, want_rx) = crossbeam::channel::bounded::<()>(1);
        let (body_tx, body_rx) = crossbeam::channel::unbounded::<Arc<[u8]>>();

        let collecting = Collecting {
            bodies: Some(body_tx),
            waker: waker.clone(),
        };
        let collector = std::thread::Builder::new()
            .name("roce-metrics-collector".into())
            .spawn(move || {
                // Ends when the I/O thread drops its side.
                while want_rx.recv().is_ok() {
                    let body = render();
                    let Some(bodies) = &collecting.bodies else {
                        break;
                    };
                    if bodies.send(body).is_err() {
                        break;
                    }
                    let _ = collecting.waker.wake();
                }
            })
            .map_err(|e| anyhow!("cannot start the metrics collector thread: {e}"))?;
        let event_loop = EventLoop::new(
            poll,
            listener,
            limits,
            content_type,
            Collector {
                want: want_tx,
                bodies: body_rx,
            },
            stop.clone(),
        );
        let io = std::thread::Builder::new()
            .name("roce-metrics".into())
            .spawn(move || event_loop.run())
            .map_err(|e| anyhow!("cannot start the metrics thread: {e}"))?;
        tracing::info!(%addr, "serving metrics");
        Ok(MetricsServer {
            addr,
            stop,
            waker,
            threads: vec![io, collector],
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// The collector's end of the channel to the I/O thread. However the collector ends (a panic in
/// `render` included), the channel is closed and the I/O thread woken, so it answers 503 from
/// then on instead of waiting for an exposition that will not come.
struct Collecting {
    bodies: Option<crossbeam::channel::Sender<Arc<[u8]>>>,
    waker: Arc<Waker>,
}

impl Drop for Collecting {
    fn drop(&mut self) {
        drop(self.bodies.take());
        let _ = self.waker.wake();
    }
}

/// A nonblocking listener on `addr` with a backlog of [`LISTEN_BACKLOG`].
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(TcpListener::from_std(socket.into()))
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.waker.wake();
        // The I/O thread ends first; its end disconnects the collector, which ends after the
        // rendering it may be in.
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
