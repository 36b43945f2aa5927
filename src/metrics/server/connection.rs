//! One client of the metrics endpoint, as a state machine over a nonblocking socket: read a
//! head (at most [`MAX_HEAD_BYTES`]), wait for the exposition, write the response, then linger
//! (reading and dropping at most [`Limits::linger_bytes`]) so the client reads the response
//! before the close. Never reads a body into memory. Not here: accepting, deadlines, eviction
//! (the event loop's).

use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::sync::Arc;
use std::time::Instant;

use mio::net::TcpStream;

use super::Limits;
use crate::metrics::request::{self, Method, Parsed, Status, MAX_HEAD_BYTES};

/// Where a connection is.
pub(super) enum Phase {
    /// Reading its head (what came so far; no more than [`MAX_HEAD_BYTES`]).
    Reading(Vec<u8>),
    /// A GET (or HEAD: `head_only`) waiting for the exposition.
    Waiting { head_only: bool },
    /// Writing `head` then `body`; `written` bytes of the two are out.
    Writing {
        head: Vec<u8>,
        body: Option<Arc<[u8]>>,
        written: usize,
    },
    /// Response written and our side shut: dropping what the client still sends until it
    /// closes.
    Lingering { discarded: usize },
}

/// What [`Connection::advance`] left the connection needing.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Readiness from the socket.
    Socket,
    /// The exposition (it is [`Phase::Waiting`]).
    Exposition,
    /// Closing: done, gone or broken.
    Close,
}

/// One accepted client.
pub(super) struct Connection {
    pub stream: TcpStream,
    /// Accept order (smaller: older).
    pub serial: u64,
    pub phase: Phase,
    /// When it is closed, whatever its phase.
    pub deadline: Instant,
}

enum Io {
    Done(usize),
    WouldBlock,
    Closed,
}

fn retrying(mut f: impl FnMut() -> std::io::Result<usize>) -> Io {
    loop {
        match f() {
            Ok(0) => return Io::Closed,
            Ok(n) => return Io::Done(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Io::WouldBlock,
            Err(_) => return Io::Closed,
        }
    }
}

impl Connection {
    /// A connection accepted at `now`: it has [`Limits::head_deadline`] to send its head.
    pub fn new(stream: TcpStream, serial: u64, now: Instant, limits: &Limits) -> Self {
        Connection {
            stream,
            serial,
            phase: Phase::Reading(Vec::new()),
            deadline: now + limits.head_deadline,
        }
    }

    /// Which to close first when the endpoint is full (smallest first): lingering ones, then
    /// those still sending their heads, then those being answered; older first within each.
    pub fn eviction_rank(&self) -> (u8, u64) {
        let phase = match self.phase {
            Phase::Lingering { .. } => 0,
            Phase::Reading(_) => 1,
            Phase::Waiting { .. } | Phase::Writing { .. } => 2,
        };
        (phase, self.serial)
    }

    /// Starts writing the answer `status` (with `body` on a 200; `None` on a HEAD).
    pub fn respond(
        &mut self,
        status: Status,
        content_type: &str,
        body: Option<Arc<[u8]>>,
        body_len: usize,
    ) {
        let (head, body) = if status == Status::Ok {
            (request::response_head(status, content_type, body_len), body)
        } else {
            let text = status.error_body();
            let mut head = request::response_head(status, "text/plain; charset=utf-8", text.len());
            head.extend_from_slice(text.as_bytes());
            (head, None)
        };
        self.phase = Phase::Writing {
            head,
            body,
            written: 0,
        };
    }

    /// Goes as far as the socket allows: reads the head, writes the answer, lingers.
    pub fn advance(&mut self, now: Instant, limits: &Limits, content_type: &str) -> Next {
        loop {
            match &mut self.phase {
                Phase::Reading(buf) => {
                    let parsed = match read_head(&mut self.stream, buf) {
                        Ok(Some(p)) => p,
                        Ok(None) => return Next::Socket,
                        Err(()) => return Next::Close,
                    };
                    let status = match parsed {
                        Ok(Parsed::Partial) => return Next::Socket,
                        Ok(Parsed::Complete(r)) => r.status(),
                        Err(e) => e.status(),
                    };
                    // What the client sent is no longer needed.
                    *buf = Vec::new();
                    self.deadline = now + limits.write_deadline;
                    if status == Status::Ok {
                        let head_only =
                            matches!(parsed, Ok(Parsed::Complete(r)) if r.method == Method::Head);
                        self.phase = Phase::Waiting { head_only };
                        return Next::Exposition;
                    }
                    self.respond(status, content_type, None, 0);
                }
                Phase::Waiting { .. } => return Next::Exposition,
                Phase::Writing {
                    head,
                    body,
                    written,
                } => {
                    let body: &[u8] = body.as_deref().unwrap_or(&[]);
                    let total = head.len() + body.len();
                    while *written < total {
                        let rest = match head.get(*written..) {
                            Some(h) if !h.is_empty() => h,
                            _ => body.get(*written - head.len()..).unwrap_or(&[]),
                        };
                        match retrying(|| self.stream.write(rest)) {
                            Io::Done(n) => *written += n,
                            Io::WouldBlock => return Next::Socket,
                            Io::Closed => return Next::Close,
                        }
                    }
                    // The response is out: tell the client, then let it read before we close.
                    let _ = self.stream.shutdown(Shutdown::Write);
                    self.phase = Phase::Lingering { discarded: 0 };
                    self.deadline = now + limits.linger;
                }
                Phase::Lingering { discarded } => {
                    let mut sink = [0u8; 4096];
                    loop {
                        match retrying(|| self.stream.read(&mut sink)) {
                            Io::Done(n) => {
                                *discarded += n;
                                if *discarded > limits.linger_bytes {
                                    return Next::Close;
                                }
                            }
                            Io::WouldBlock => return Next::Socket,
                            Io::Closed => return Next::Close,
                        }
                    }
                }
            }
        }
    }
}

/// Reads what the socket has into `buf` (up to [`MAX_HEAD_BYTES`] in all) and parses it:
/// `Some` once the head is complete, too long or malformed; `None` when the socket has no more
/// for now; `Err` when the client closed or the socket broke.
fn read_head(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Result<Option<Result<Parsed, request::RequestError>>, ()> {
    let mut chunk = [0u8; 4096];
    loop {
        let room = MAX_HEAD_BYTES.saturating_sub(buf.len()).min(chunk.len());
        if room == 0 {
            return Ok(Some(request::parse(buf)));
        }
        let to = chunk.get_mut(..room).unwrap_or(&mut []);
        match retrying(|| stream.read(to)) {
            Io::Done(n) => {
                if buf.capacity() == 0 {
                    buf.reserve_exact(MAX_HEAD_BYTES);
                }
                buf.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
                match request::parse(buf) {
                    Ok(Parsed::Partial) => continue,
                    done => return Ok(Some(done)),
                }
            }
            Io::WouldBlock => return Ok(None),
            Io::Closed => return Err(()),
        }
    }
}
