//! A tap on one port: every frame the port puts on its wire and every frame that arrives at it
//! (FCS-bad ones excepted, as a NIC drops them before any capture), with its virtual time in
//! nanoseconds. The fabric only keeps the frames; the driver drains them and writes the file
//! (`roce sim --pcap`), so the fabric knows nothing of pcap.
//!
//! Frames are kept in event order, so their times never go backwards: a sent frame at the start
//! of its serialization, a received one when its last bit arrives.

use super::fabric::Fabric;
use super::wires::Wires;
use super::{HostId, Node, PktId, SwitchId};
use roce_proto::engine::Engine;

/// One captured frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturedFrame {
    /// Virtual time, ns.
    pub t_ns: u64,
    /// Sent by the port (true) or received by it.
    pub outbound: bool,
    /// The frame, as it crossed the port (CE marks and INT hops included).
    pub frame: Vec<u8>,
}

/// The port being captured and what it has seen since the last drain.
#[derive(Debug)]
pub(crate) struct PortCapture {
    at: (Node, u16),
    frames: Vec<CapturedFrame>,
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
fn some_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let all: Vec<&str> = names.collect();
    let shown = all.iter().take(6).copied().collect::<Vec<_>>().join(", ");
    match all.len() {
        0 => "none".to_owned(),
        n if n > 6 => format!("{shown} and {} more", n - 6),
        _ => shown,
    }
}

impl<E: Engine> Fabric<E> {
    /// The port `spec` names: `NODE:PORT` or a host's `NODE` alone (its NIC, port 0). NODE is a
    /// node's name (`sw0`, `leaf1r0`, `h3`) or `host<N>` / `switch<N>` by index.
    pub fn find_port(&self, spec: &str) -> Result<(Node, u16), PortRefError> {
        let (name, port) = match spec.rsplit_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (spec, None),
        };
        let by_index = |prefix: &str| name.strip_prefix(prefix)?.parse::<usize>().ok();
        let switch = (0..self.switches.len())
            .find(|&s| self.switch_name(SwitchId(s)) == name)
            .or_else(|| by_index("switch").filter(|&s| s < self.switches.len()));
        let host = (0..self.host_count())
            .find(|&h| self.host_name(HostId(h)) == name)
            .or_else(|| by_index("host").filter(|&h| h < self.host_count()));
        let (node, count) = match (switch, host) {
            (Some(s), _) => (
                Node::Switch(SwitchId(s)),
                self.switches.get(s).map_or(0, |sw| sw.port_count()),
            ),
            (None, Some(h)) => (Node::Host(HostId(h)), 1),
            (None, None) => {
                return Err(PortRefError::NoSuchNode {
                    name: name.to_owned(),
                    switches: some_names(self.switches.iter().map(|s| s.name())),
                    hosts: some_names(self.hosts.iter().map(|h| h.name.as_str())),
                })
            }
        };
        let port = match (port, node) {
            (None, Node::Host(_)) => 0,
            (None, Node::Switch(_)) => return Err(PortRefError::NoPort(name.to_owned())),
            (Some(p), _) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| usize::from(p) < count)
                .ok_or_else(|| PortRefError::NoSuchPort {
                    node: name.to_owned(),
                    port: p.to_owned(),
                    count,
                })?,
        };
        Ok((node, port))
    }

    /// Captures every frame crossing `node`'s `port` from now on (one port at a time).
    pub fn capture_port(&mut self, node: Node, port: u16) {
        self.w.capture = Some(PortCapture {
            at: (node, port),
            frames: Vec::new(),
        });
    }

    /// The frames captured since the last drain, oldest first.
    pub fn drain_captured(&mut self) -> Vec<CapturedFrame> {
        self.w
            .capture
            .as_mut()
            .map(|c| std::mem::take(&mut c.frames))
            .unwrap_or_default()
    }
}

impl Wires {
    /// Keeps `pkt` if it crosses the captured port: sent by (`outbound`) or arriving at
    /// `node`'s `port`.
    pub(super) fn capture(&mut self, node: Node, port: u16, pkt: PktId, outbound: bool) {
        let Some(c) = self.capture.as_mut().filter(|c| c.at == (node, port)) else {
            return;
        };
        c.frames.push(CapturedFrame {
            t_ns: self.now,
            outbound,
            frame: self.pool.frame(pkt).to_vec(),
        });
    }
}
