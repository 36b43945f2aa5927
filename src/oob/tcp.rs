//! A small blocking TCP driver for the out-of-band exchanges (driver code: it does I/O). Every
//! wait has a deadline: connect, accept, and each message as a whole (a peer trickling one byte
//! at a time cannot stretch a read past it). Every failure is one [`ExchangeError`] naming the
//! step, the peer and what happened. Not for the data path: one connection, a few kilobytes.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::perftest::{self, BwReport, PerftestDest, SysData};
use super::pingpong::{self, PingpongDest};
use super::verbs_peer::{self, VerbsPeerInfo};
use super::DecodeError;

/// Deadlines for the waits of an exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP connect.
    pub connect: Duration,
    /// Waiting for a client to connect.
    pub accept: Duration,
    /// One whole message, read or written: a deadline from its first byte's wait to its last,
    /// not an idle timeout between reads.
    pub io: Duration,
}

impl Default for Timeouts {
    /// 5 s to connect, 60 s to be connected to, 10 s per message (rxe under TCG moves a QP to
    /// RTR in about a second, ARP included).
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(5),
            accept: Duration::from_secs(60),
            io: Duration::from_secs(10),
        }
    }
}

/// Why an exchange failed; `step` names what we were doing.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// Nothing answered within the connect timeout.
    #[error("connect to {addr}: no answer within {timeout:?}")]
    ConnectTimeout {
        /// The peer.
        addr: SocketAddr,
        /// The deadline.
        timeout: Duration,
    },
    /// The connection was refused or failed.
    #[error("connect to {addr}")]
    Connect {
        /// The peer.
        addr: SocketAddr,
        /// What the OS said.
        source: std::io::Error,
    },
    /// No client connected within the accept timeout.
    #[error("no client connected within {0:?}")]
    AcceptTimeout(Duration),
    /// Accepting or configuring the socket failed.
    #[error("socket setup")]
    Socket(#[source] std::io::Error),
    /// A message did not arrive (or leave) whole within its deadline.
    #[error("{step}: {}", timeout_text(*.timeout, *.got, *.peer))]
    Timeout {
        /// The step.
        step: &'static str,
        /// The deadline for the whole message.
        timeout: Duration,
        /// Bytes of the message that had moved when it passed.
        got: usize,
        /// The peer.
        peer: SocketAddr,
    },
    /// The peer closed the connection early.
    #[error("{step}: {peer} closed the connection after {got} of {expected} bytes")]
    Closed {
        /// The step.
        step: &'static str,
        /// Bytes received.
        got: usize,
        /// Bytes the step needs.
        expected: usize,
        /// The peer.
        peer: SocketAddr,
    },
    /// Another I/O error.
    #[error("{step}: {}", io_text(.error, *.peer))]
    Io {
        /// The step.
        step: &'static str,
        /// The peer.
        peer: SocketAddr,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The peer's message was malformed.
    #[error("{step}")]
    Decode {
        /// The step.
        step: &'static str,
        /// What was wrong.
        source: DecodeError,
    },
    /// Our side could not go on (the caller's connect callback failed, or a value we cannot send).
    #[error("{step}: {reason}")]
    Local {
        /// The step.
        step: &'static str,
        /// Why.
        reason: String,
    },
}

/// A silent peer, or one whose message stopped short of its deadline.
fn timeout_text(timeout: Duration, got: usize, peer: SocketAddr) -> String {
    if got == 0 {
        format!("peer silent for {timeout:?}")
    } else {
        format!(
            "timed out after {timeout:?} with the message incomplete ({got} bytes moved, peer {peer})"
        )
    }
}

/// What an I/O error means for the exchange, with the peer's address.
fn io_text(error: &std::io::Error, peer: SocketAddr) -> String {
    match error.kind() {
        ErrorKind::ConnectionReset => format!("connection reset by {peer}"),
        ErrorKind::ConnectionAborted => format!("connection to {peer} aborted"),
        ErrorKind::BrokenPipe => format!("{peer} closed the connection while we were writing"),
        _ => format!("{error} (peer {peer})"),
    }
}

fn decode<T>(step: &'static str, r: Result<T, DecodeError>) -> Result<T, ExchangeError> {
    r.map_err(|source| ExchangeError::Decode { step, source })
}

/// A read or write that stopped short of an error: a signal, or its socket timeout (the
/// caller's deadline decides what happens next).
fn interrupted_or_timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Interrupted | ErrorKind::WouldBlock | ErrorKind::TimedOut
    )
}

/// `now + d`, or a century from now when `d` is beyond what the clock can add.
fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400))
}

/// The warning a server owes its user when it listens on every interface (`0.0.0.0`, `::`):
/// anyone who reaches the port can speak the exchange with it. `None` for a specific address.
pub fn every_interface_warning(addr: SocketAddr) -> Option<String> {
    addr.ip().is_unspecified().then(|| {
        format!(
            "warning: listening on every interface ({addr}): anyone who reaches this TCP port \
             can start an exchange with this server"
        )
    })
}

/// Which side of the exchange we are: the client writes first in every step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Connected to the peer (the tools' `<host>` argument).
    Client,
    /// Accepted the peer's connection.
    Server,
}

/// Bytes asked of the socket per read.
const CHUNK: usize = 4096;

/// One TCP connection with a deadline on every wait.
#[derive(Debug)]
pub struct OobStream {
    stream: TcpStream,
    peer: SocketAddr,
    timeouts: Timeouts,
    role: Role,
    /// Bytes read past the end of the last message (at most one read's worth).
    pending: Vec<u8>,
}

impl OobStream {
    /// Connects to `addr` within `timeouts.connect`.
    pub fn connect(addr: SocketAddr, timeouts: Timeouts) -> Result<Self, ExchangeError> {
        let stream = TcpStream::connect_timeout(&addr, timeouts.connect).map_err(|source| {
            if matches!(source.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) {
                ExchangeError::ConnectTimeout {
                    addr,
                    timeout: timeouts.connect,
                }
            } else {
                ExchangeError::Connect { addr, source }
            }
        })?;
        Self::configure(stream, addr, timeouts, Role::Client)
    }

    /// Waits up to `timeouts.accept` for one client on `listener`.
    pub fn accept(listener: &TcpListener, timeouts: Timeouts) -> Result<Self, ExchangeError> {
        listener
            .set_nonblocking(true)
            .map_err(ExchangeError::Socket)?;
        let deadline = deadline_after(timeouts.accept);
        let (stream, peer) = loop {
            match listener.accept() {
                Ok((stream, peer)) => {
                    tracing::debug!(%peer, "oob: accepted");
                    break (stream, peer);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(ExchangeError::AcceptTimeout(timeouts.accept));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(ExchangeError::Socket(e)),
            }
        };
        stream
            .set_nonblocking(false)
            .map_err(ExchangeError::Socket)?;
        Self::configure(stream, peer, timeouts, Role::Server)
    }

    fn configure(
        stream: TcpStream,
        peer: SocketAddr,
        timeouts: Timeouts,
        role: Role,
    ) -> Result<Self, ExchangeError> {
        stream.set_nodelay(true).map_err(ExchangeError::Socket)?;
        Ok(OobStream {
            stream,
            peer,
            timeouts,
            role,
            pending: Vec::new(),
        })
    }

    /// Changes how long one message may take.
    pub fn set_io_timeout(&mut self, io: Duration) -> Result<(), ExchangeError> {
        self.timeouts.io = io;
        Ok(())
    }

    /// Our role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The other end's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    fn io_error(&self, step: &'static str, error: std::io::Error) -> ExchangeError {
        ExchangeError::Io {
            step,
            peer: self.peer,
            error,
        }
    }

    fn timeout(&self, step: &'static str, got: usize) -> ExchangeError {
        ExchangeError::Timeout {
            step,
            timeout: self.timeouts.io,
            got,
            peer: self.peer,
        }
    }

    /// Time left before `deadline`, or the timeout error (`got` bytes of the message moved).
    fn left(
        &self,
        step: &'static str,
        deadline: Instant,
        got: usize,
    ) -> Result<Duration, ExchangeError> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(self.timeout(step, got))
        } else {
            Ok(left)
        }
    }

    /// Reads what the socket has (waiting no later than `deadline`) into `pending`; returns
    /// how many bytes came, 0 when the peer closed.
    fn read_some(&mut self, step: &'static str, deadline: Instant) -> Result<usize, ExchangeError> {
        let mut chunk = [0u8; CHUNK];
        loop {
            let left = self.left(step, deadline, self.pending.len())?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(ExchangeError::Socket)?;
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    self.pending
                        .extend_from_slice(chunk.get(..n).unwrap_or_default());
                    return Ok(n);
                }
                // The loop checks the deadline.
                Err(e) if interrupted_or_timed_out(&e) => {}
                Err(e) => return Err(self.io_error(step, e)),
            }
        }
    }

    /// Writes all of `bytes` before the message's deadline.
    pub fn send(&mut self, step: &'static str, bytes: &[u8]) -> Result<(), ExchangeError> {
        let deadline = deadline_after(self.timeouts.io);
        let mut sent = 0;
        while let Some(rest) = bytes.get(sent..).filter(|r| !r.is_empty()) {
            let left = self.left(step, deadline, sent)?;
            self.stream
                .set_write_timeout(Some(left))
                .map_err(ExchangeError::Socket)?;
            match self.stream.write(rest) {
                Ok(0) => return Err(self.io_error(step, ErrorKind::WriteZero.into())),
                Ok(n) => sent += n,
                Err(e) if interrupted_or_timed_out(&e) => {}
                Err(e) => return Err(self.io_error(step, e)),
            }
        }
        Ok(())
    }

    /// Reads exactly `len` bytes before the message's deadline.
    pub fn recv_exact(&mut self, step: &'static str, len: usize) -> Result<Vec<u8>, ExchangeError> {
        let deadline = deadline_after(self.timeouts.io);
        while self.pending.len() < len {
            if self.read_some(step, deadline)? == 0 {
                return Err(ExchangeError::Closed {
                    step,
                    got: self.pending.len(),
                    expected: len,
                    peer: self.peer,
                });
            }
        }
        Ok(self.pending.drain(..len).collect())
    }

    /// Reads one line up to and including `\n` (at most `max` bytes) before the message's
    /// deadline.
    pub fn recv_line(&mut self, step: &'static str, max: usize) -> Result<Vec<u8>, ExchangeError> {
        let deadline = deadline_after(self.timeouts.io);
        let mut scanned = 0;
        loop {
            let newline = self
                .pending
                .get(scanned..)
                .and_then(|new| new.iter().position(|&b| b == b'\n'));
            if let Some(end) = newline.map(|i| scanned + i + 1).filter(|&end| end <= max) {
                return Ok(self.pending.drain(..end).collect());
            }
            scanned = self.pending.len();
            if newline.is_some() || scanned >= max {
                return Err(ExchangeError::Decode {
                    step,
                    source: DecodeError::TooLong { what: step, max },
                });
            }
            if self.read_some(step, deadline)? == 0 {
                return Err(ExchangeError::Closed {
                    step,
                    got: scanned,
                    expected: scanned + 1,
                    peer: self.peer,
                });
            }
        }
    }

    /// One symmetric step: the client writes `mine` then reads as many bytes, the server reads
    /// then writes.
    pub fn exchange(&mut self, step: &'static str, mine: &[u8]) -> Result<Vec<u8>, ExchangeError> {
        match self.role {
            Role::Client => {
                self.send(step, mine)?;
                self.recv_exact(step, mine.len())
            }
            Role::Server => {
                let theirs = self.recv_exact(step, mine.len())?;
                self.send(step, mine)?;
                Ok(theirs)
            }
        }
    }
}

/// ibv_rc_pingpong client: sends `mine`, reads the server's data, sends `done`.
pub fn pingpong_client(
    addr: SocketAddr,
    mine: &PingpongDest,
    timeouts: Timeouts,
) -> Result<PingpongDest, ExchangeError> {
    let mut s = OobStream::connect(addr, timeouts)?;
    s.send("send rc_pingpong dest", &mine.encode())?;
    let msg = s.recv_exact("read rc_pingpong dest", pingpong::MESSAGE_LEN)?;
    let theirs = decode("read rc_pingpong dest", PingpongDest::decode(&msg))?;
    s.send("send done", pingpong::DONE)?;
    Ok(theirs)
}

/// ibv_rc_pingpong server: accepts one client, reads its data, calls `connect` (move the QP to
/// RTR/RTS there, and answer ARP meanwhile) which returns our data, replies, reads `done`.
pub fn pingpong_server<E: std::fmt::Display>(
    listener: &TcpListener,
    timeouts: Timeouts,
    connect: impl FnOnce(&PingpongDest) -> Result<PingpongDest, E>,
) -> Result<PingpongDest, ExchangeError> {
    let mut s = OobStream::accept(listener, timeouts)?;
    let msg = s.recv_exact("read rc_pingpong dest", pingpong::MESSAGE_LEN)?;
    let theirs = decode("read rc_pingpong dest", PingpongDest::decode(&msg))?;
    let mine = connect(&theirs).map_err(|e| ExchangeError::Local {
        step: "connect QP",
        reason: e.to_string(),
    })?;
    s.send("send rc_pingpong dest", &mine.encode())?;
    let done = s.recv_exact("read done", pingpong::DONE.len())?;
    decode("read done", pingpong::decode_done(&done))?;
    Ok(theirs)
}

/// What both sides of a perftest run agreed on in the preamble.
#[derive(Clone, Debug, PartialEq)]
pub struct PerftestPreamble {
    /// The peer's version string.
    pub remote_version: String,
    /// The peer's system data.
    pub remote_sys: SysData,
    /// The smaller of the two path MTUs (what both sides then use).
    pub path_mtu: u16,
}

/// A perftest connection (bandwidth tests, one QP, no rdma_cm); see [`super::perftest`] for the
/// order of the steps.
#[derive(Debug)]
pub struct PerftestConn {
    stream: OobStream,
    with_gid: bool,
}

impl PerftestConn {
    /// Wraps a connected stream; `with_gid` selects the 108-byte key format (RoCE: true).
    pub fn new(stream: OobStream, with_gid: bool) -> Self {
        PerftestConn { stream, with_gid }
    }

    /// Steps 1-3: version, system data, MTU. `version` is what we claim (use
    /// [`perftest::DEBIAN12_VERSION`]); peers older than 5.33 are refused (other formats).
    pub fn preamble(
        &mut self,
        version: &str,
        sys: SysData,
        path_mtu: u16,
    ) -> Result<PerftestPreamble, ExchangeError> {
        let theirs = self
            .stream
            .exchange("perftest version", &perftest::encode_version(version))?;
        let remote_version = decode("perftest version", perftest::decode_version(&theirs))?;
        if perftest::version_number(&remote_version) < 5.33 {
            return Err(ExchangeError::Local {
                step: "perftest version",
                reason: format!(
                    "peer version {remote_version} is older than 5.33 (unsupported formats)"
                ),
            });
        }
        let step = "perftest cycle buffer";
        let theirs = self
            .stream
            .exchange(step, &sys.cycle_buffer.to_be_bytes())?;
        let cycle_buffer = decode(step, perftest::decode_i32(step, &theirs))?;
        let step = "perftest cache line size";
        let theirs = self
            .stream
            .exchange(step, &sys.cache_line_size.to_be_bytes())?;
        let cache_line_size = decode(step, perftest::decode_i32(step, &theirs))?;
        let step = "perftest mtu";
        let mine = perftest::encode_mtu(path_mtu).ok_or_else(|| ExchangeError::Local {
            step,
            reason: format!("{path_mtu} is not an IB path MTU"),
        })?;
        let theirs = self.stream.exchange(step, &mine)?;
        let remote_mtu = decode(step, perftest::decode_mtu(&theirs))?;
        Ok(PerftestPreamble {
            remote_version,
            remote_sys: SysData {
                cycle_buffer,
                cache_line_size,
            },
            path_mtu: remote_mtu.min(path_mtu),
        })
    }

    /// One `ctx_hand_shake`: our keys for theirs.
    pub fn hand_shake(&mut self, mine: &PerftestDest) -> Result<PerftestDest, ExchangeError> {
        if mine.gid.is_some() != self.with_gid {
            return Err(ExchangeError::Local {
                step: "perftest keys",
                reason: "our keys and the agreed key format disagree on the GID".into(),
            });
        }
        let theirs = self.stream.exchange("perftest keys", &mine.encode())?;
        decode(
            "perftest keys",
            PerftestDest::decode(&theirs, self.with_gid),
        )
    }

    /// Step 6: the report exchange.
    pub fn xchg_bw_report(&mut self, mine: &BwReport) -> Result<BwReport, ExchangeError> {
        let mut theirs = [[0u8; 8]; 5];
        for (mine, theirs) in mine.encode().iter().zip(theirs.iter_mut()) {
            let got = self.stream.exchange("perftest report", mine)?;
            theirs.copy_from_slice(&got);
        }
        Ok(BwReport::decode(&theirs))
    }

    /// Step 7: a last hand shake, then `done`, then close (perftest reads no `done`).
    pub fn close(mut self, mine: &PerftestDest) -> Result<(), ExchangeError> {
        self.hand_shake(mine)?;
        self.stream.send("send done", perftest::DONE)
    }
}

/// rc_verbs_peer.py client: sends our line, reads the server's. Call
/// [`verbs_peer_finish`] with the returned stream when the operations are done.
pub fn verbs_peer_client(
    addr: SocketAddr,
    mine: &VerbsPeerInfo,
    timeouts: Timeouts,
) -> Result<(VerbsPeerInfo, OobStream), ExchangeError> {
    let mut s = OobStream::connect(addr, timeouts)?;
    s.send("send verbs peer line", &mine.encode())?;
    let line = s.recv_line("read verbs peer line", 1024)?;
    let theirs = decode("read verbs peer line", VerbsPeerInfo::decode(&line))?;
    Ok((theirs, s))
}

/// Tells an rc_verbs_peer.py server that the client is finished.
pub fn verbs_peer_finish(mut stream: OobStream) -> Result<(), ExchangeError> {
    stream.send("send done", verbs_peer::DONE)
}
