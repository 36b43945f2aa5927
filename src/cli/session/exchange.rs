//! The out-of-band TCP exchange of a session (QP numbers, PSNs, keys; perftest's or
//! rc_pingpong's messages), run on a thread of its own so the poll loop keeps answering ARP while
//! the kernel's TCP stack does the talking: the loop sends a [`Req`] and polls until the answer
//! comes. Not here: what the messages say (the commands and [`roce::oob`]).

use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration as StdDuration;

use anyhow::{anyhow, bail, Context};

use roce::oob::tcp::{every_interface_warning, ExchangeError, OobStream, Timeouts};
use roce_dpdk::MemifRole;

use super::args::PortArgs;

/// Whatever waits for the out-of-band thread's answers: a [`super::Session`] polls its port
/// meanwhile, [`Blocking`] just waits (lcores poll themselves).
pub trait Ask {
    /// Sends `req` to the out-of-band thread and returns its answer.
    fn ask(&mut self, oob: &Oob, req: Req) -> anyhow::Result<Vec<u8>>;
}

/// Waits for the out-of-band thread without polling anything.
pub struct Blocking;

impl Ask for Blocking {
    fn ask(&mut self, oob: &Oob, req: Req) -> anyhow::Result<Vec<u8>> {
        oob.request(req)
    }
}

/// A request to the out-of-band thread.
#[derive(Debug)]
pub enum Req {
    /// Write these bytes.
    Send(&'static str, Vec<u8>),
    /// Read one newline-terminated line.
    RecvLine(&'static str),
    /// Read exactly this many bytes.
    RecvExact(&'static str, usize),
    /// perftest's symmetric step (client writes first, server reads first).
    Exchange(&'static str, Vec<u8>),
    /// From now on, a read or write may wait this long.
    IoTimeout(StdDuration),
}

/// How the out-of-band connection starts.
pub enum Connect {
    /// Wait for a client on this listener.
    Server(TcpListener),
    /// Connect to the server (retrying refused connections until the timeout).
    Client(SocketAddr),
}

impl Connect {
    /// The memif role of this side when `--port` leaves it open: the TCP server listens on the
    /// memif socket too, the client connects to it.
    pub fn memif_role(&self) -> MemifRole {
        match self {
            Connect::Server(_) => MemifRole::Server,
            Connect::Client(_) => MemifRole::Client,
        }
    }
}

/// The out-of-band TCP connection, run on its own thread.
pub struct Oob {
    pub(super) tx: Sender<Req>,
    pub(super) rx: Receiver<Result<Vec<u8>, String>>,
    peer: &'static str,
}

/// The TCP side of the exchange, bound or resolved before anything else (a busy port fails
/// before EAL starts): no `server` address, listen on `tcp_port` at [`PortArgs::bind_addr`];
/// else connect to `server`.
pub fn connect(server: Option<&str>, tcp_port: u16, port: &PortArgs) -> anyhow::Result<Connect> {
    Ok(match server {
        None => Connect::Server(listen(port.bind_addr()?, tcp_port)?),
        Some(host) => Connect::Client(server_addr(host, tcp_port)?),
    })
}

/// Resolves the server's TCP address.
fn server_addr(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve server address {host:?}"))?
        .next()
        .ok_or_else(|| anyhow!("server address {host:?} has no IP address"))
}

/// Binds the server's TCP port on `addr`.
fn listen(addr: IpAddr, port: u16) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind((addr, port)).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => anyhow!("TCP port {port} is busy"),
        std::io::ErrorKind::AddrNotAvailable => {
            anyhow!("--bind {addr}: no interface of this host has that address")
        }
        _ => anyhow!("cannot listen on {addr} port {port}: {e}"),
    })?;
    let at = listener
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::new(addr, port));
    if let Some(warning) = every_interface_warning(at) {
        crate::cli::output::note(warning);
    }
    tracing::info!(%at, "listening for the TCP exchange");
    Ok(listener)
}

impl Oob {
    /// Starts the thread; it connects (or accepts) and then serves requests in order.
    pub fn start(connect: Connect, timeout: StdDuration) -> Oob {
        let peer = match connect {
            Connect::Server(_) => "client",
            Connect::Client(_) => "server",
        };
        let (tx, req_rx) = mpsc::channel::<Req>();
        let (rep_tx, rx) = mpsc::channel();
        let timeouts = Timeouts {
            connect: timeout,
            accept: timeout,
            io: timeout,
        };
        std::thread::spawn(move || {
            let stream = match establish(connect, timeouts) {
                Ok(s) => s,
                Err(e) => {
                    // Answer the first request with the error.
                    if req_rx.recv().is_ok() {
                        let _ = rep_tx.send(Err(e.to_string()));
                    }
                    return;
                }
            };
            serve(stream, &req_rx, &rep_tx);
        });
        Oob { tx, rx, peer }
    }

    /// What the other side is: `client` or `server`.
    pub fn peer(&self) -> &'static str {
        self.peer
    }

    /// Sends `req` and waits for its answer (nothing to poll meanwhile: lcores poll themselves).
    pub fn request(&self, req: Req) -> anyhow::Result<Vec<u8>> {
        self.tx
            .send(req)
            .map_err(|_| anyhow!("the TCP exchange thread has stopped"))?;
        match self.rx.recv() {
            Ok(r) => r.map_err(|e| anyhow!(e)),
            Err(_) => bail!("the TCP exchange thread has stopped"),
        }
    }
}

fn establish(connect: Connect, timeouts: Timeouts) -> Result<OobStream, String> {
    match connect {
        Connect::Server(listener) => OobStream::accept(&listener, timeouts).map_err(|e| {
            let at = listener
                .local_addr()
                .map_or_else(|_| "?".into(), |a| a.to_string());
            format!("waiting for the client on {at} (--bind to listen elsewhere): {e}")
        }),
        Connect::Client(addr) => {
            let deadline = std::time::Instant::now() + timeouts.connect;
            loop {
                match OobStream::connect(addr, timeouts) {
                    Ok(s) => return Ok(s),
                    Err(ExchangeError::Connect { source, .. })
                        if source.kind() == std::io::ErrorKind::ConnectionRefused
                            && std::time::Instant::now() < deadline =>
                    {
                        std::thread::sleep(StdDuration::from_millis(100));
                    }
                    Err(ExchangeError::Connect { source, .. })
                        if source.kind() == std::io::ErrorKind::ConnectionRefused =>
                    {
                        return Err(format!(
                            "no server listens at {addr} (refused for {} s)",
                            timeouts.connect.as_secs()
                        ))
                    }
                    Err(e) => return Err(format!("{e}")),
                }
            }
        }
    }
}

fn serve(mut stream: OobStream, reqs: &Receiver<Req>, reps: &Sender<Result<Vec<u8>, String>>) {
    loop {
        let req = match reqs.recv_timeout(StdDuration::from_secs(3600)) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
        };
        let rep = match req {
            Req::Send(step, bytes) => stream.send(step, &bytes).map(|()| Vec::new()),
            Req::RecvLine(step) => stream.recv_line(step, roce::oob::perf::MAX_LINE),
            Req::RecvExact(step, n) => stream.recv_exact(step, n),
            Req::Exchange(step, bytes) => stream.exchange(step, &bytes),
            Req::IoTimeout(t) => stream.set_io_timeout(t).map(|()| Vec::new()),
        };
        let failed = rep.is_err();
        // The error with its causes: what was wrong, not only the step.
        let rep = rep.map_err(|e| format!("peer: {:#}", anyhow::Error::new(e)));
        if reps.send(rep).is_err() || failed {
            return;
        }
    }
}

/// The IPv4 address inside a GID (`::ffff:a.b.c.d`), or the IPv6 address itself.
pub fn gid_ip(gid: std::net::Ipv6Addr) -> IpAddr {
    match gid.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(gid),
    }
}
