//! A small blocking TCP driver for the out-of-band exchanges (driver code: it does I/O). Every
//! wait has a deadline (connect, accept, each read, each write) and every failure is one
//! [`ExchangeError`] naming the step. Not for the data path: one connection, a few hundred bytes.

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
    /// Each read and each write.
    pub io: Duration,
}

impl Default for Timeouts {
    /// 5 s to connect, 60 s to be connected to, 10 s per read or write (rxe under TCG moves a QP
    /// to RTR in about a second, ARP included).
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
    /// A read or write did not complete in time.
    #[error("{step}: peer silent for {timeout:?}")]
    Timeout {
        /// The step.
        step: &'static str,
        /// The deadline.
        timeout: Duration,
    },
    /// The peer closed the connection early.
    #[error("{step}: peer closed the connection after {got} of {expected} bytes")]
    Closed {
        /// The step.
        step: &'static str,
        /// Bytes received.
        got: usize,
        /// Bytes the step needs.
        expected: usize,
    },
    /// Another I/O error.
    #[error("{step}")]
    Io {
        /// The step.
        step: &'static str,
        /// What the OS said.
        source: std::io::Error,
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

fn decode<T>(step: &'static str, r: Result<T, DecodeError>) -> Result<T, ExchangeError> {
    r.map_err(|source| ExchangeError::Decode { step, source })
}

/// Which side of the exchange we are: the client writes first in every step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Connected to the peer (the tools' `<host>` argument).
    Client,
    /// Accepted the peer's connection.
    Server,
}

/// One TCP connection with deadlines on every wait.
#[derive(Debug)]
pub struct OobStream {
    stream: TcpStream,
    timeouts: Timeouts,
    role: Role,
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
        Self::configure(stream, timeouts, Role::Client)
    }

    /// Waits up to `timeouts.accept` for one client on `listener`.
    pub fn accept(listener: &TcpListener, timeouts: Timeouts) -> Result<Self, ExchangeError> {
        listener
            .set_nonblocking(true)
            .map_err(ExchangeError::Socket)?;
        let deadline = Instant::now() + timeouts.accept;
        let stream = loop {
            match listener.accept() {
                Ok((stream, peer)) => {
                    tracing::debug!(%peer, "oob: accepted");
                    break stream;
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
        Self::configure(stream, timeouts, Role::Server)
    }

    fn configure(stream: TcpStream, timeouts: Timeouts, role: Role) -> Result<Self, ExchangeError> {
        stream
            .set_read_timeout(Some(timeouts.io))
            .and_then(|()| stream.set_write_timeout(Some(timeouts.io)))
            .and_then(|()| stream.set_nodelay(true))
            .map_err(ExchangeError::Socket)?;
        Ok(OobStream {
            stream,
            timeouts,
            role,
        })
    }

    /// Changes how long one read or write may wait.
    pub fn set_io_timeout(&mut self, io: Duration) -> Result<(), ExchangeError> {
        self.stream
            .set_read_timeout(Some(io))
            .and_then(|()| self.stream.set_write_timeout(Some(io)))
            .map_err(ExchangeError::Socket)?;
        self.timeouts.io = io;
        Ok(())
    }

    /// Our role.
    pub fn role(&self) -> Role {
        self.role
    }

    fn io_error(&self, step: &'static str, source: std::io::Error) -> ExchangeError {
        if matches!(source.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            ExchangeError::Timeout {
                step,
                timeout: self.timeouts.io,
            }
        } else {
            ExchangeError::Io { step, source }
        }
    }

    /// Writes all of `bytes`.
    pub fn send(&mut self, step: &'static str, bytes: &[u8]) -> Result<(), ExchangeError> {
        self.stream
            .write_all(bytes)
            .map_err(|e| self.io_error(step, e))
    }

    /// Reads exactly `len` bytes.
    pub fn recv_exact(&mut self, step: &'static str, len: usize) -> Result<Vec<u8>, ExchangeError> {
        let mut buf = vec![0u8; len];
        let mut got = 0;
        while got < len {
            let rest = buf.get_mut(got..).unwrap_or_default();
            match self.stream.read(rest) {
                Ok(0) => {
                    return Err(ExchangeError::Closed {
                        step,
                        got,
                        expected: len,
                    })
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(step, e)),
            }
        }
        Ok(buf)
    }

    /// Reads one line up to and including `\n` (at most `max` bytes).
    pub fn recv_line(&mut self, step: &'static str, max: usize) -> Result<Vec<u8>, ExchangeError> {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while line.last() != Some(&b'\n') {
            if line.len() >= max {
                return Err(ExchangeError::Decode {
                    step,
                    source: DecodeError::Terminator { what: step },
                });
            }
            match self.stream.read(&mut byte) {
                Ok(0) => {
                    return Err(ExchangeError::Closed {
                        step,
                        got: line.len(),
                        expected: line.len() + 1,
                    })
                }
                Ok(_) => line.push(byte[0]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(step, e)),
            }
        }
        Ok(line)
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
