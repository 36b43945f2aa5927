//! A port capture: every frame one port puts on its wire and every frame that arrives at it
//! (FCS-bad ones excepted, as a NIC drops them before any capture), with its virtual time in
//! nanoseconds. The fabric only keeps the frames; the driver drains them and writes the file
//! (`roce sim --pcap`), so the fabric knows nothing of pcap.
//!
//! Frames are kept in event order, so their times never go backwards: a sent frame at the start
//! of its serialization, a received one when its last bit arrives.

use crate::Node;
use roce_proto::time::Instant;

/// One captured frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturedFrame {
    /// Virtual time.
    pub at: Instant,
    /// Sent by the port (true) or received by it.
    pub outbound: bool,
    /// The frame, as it crossed the port (CE marks and INT hops included).
    pub frame: Vec<u8>,
}

/// The port being captured and what it has seen since the last drain.
#[derive(Debug)]
pub(crate) struct PortCapture {
    pub(crate) at: (Node, u16),
    pub(crate) frames: Vec<CapturedFrame>,
}

impl PortCapture {
    /// Keeps `frame` at `now` if it crosses the captured port: sent by (`outbound`) or
    /// arriving at `node`'s `port`.
    pub(crate) fn keep(&mut self, at: (Node, u16), now: Instant, frame: &[u8], outbound: bool) {
        if at == self.at {
            self.frames.push(CapturedFrame {
                at: now,
                outbound,
                frame: frame.to_vec(),
            });
        }
    }
}

/// Why a `NODE:PORT` does not name a port of the fabric.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PortRefError {
    /// No node has this name.
    #[error(
        "no node {name:?}: switches are {switches}; hosts are {hosts} (or host<N>, switch<N>)"
    )]
    NoSuchNode {
        /// The name given.
        name: String,
        /// The switches' names.
        switches: String,
        /// The hosts' names.
        hosts: String,
    },
    /// The node has no such port.
    #[error("{node} has no port {port}: its ports are 0..{count}")]
    NoSuchPort {
        /// The node's name.
        node: String,
        /// The port given.
        port: String,
        /// How many ports it has.
        count: usize,
    },
    /// A switch needs a port.
    #[error("{0} is a switch: say which port, as {0}:PORT")]
    NoPort(String),
}

/// Up to six names, then how many more.
pub(crate) fn some_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let all: Vec<&str> = names.collect();
    let shown = all.iter().take(6).copied().collect::<Vec<_>>().join(", ");
    match all.len() {
        0 => "none".to_owned(),
        n if n > 6 => format!("{shown} and {} more", n - 6),
        _ => shown,
    }
}
