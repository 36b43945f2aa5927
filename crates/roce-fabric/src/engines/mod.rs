//! The engines scenarios put on fabric hosts, behind one enum so a scenario's fabric has a
//! single engine type: the real RC transport ([`RcEngine`], the default) or the stand-in
//! ([`StandInEngine`]).
//!
//! Both only see frames and `now` through [`Engine`]; neither knows it runs in a fabric.

pub mod rc;
pub mod stand_in;

use std::net::IpAddr;

use crate::frame::ip_key;
use crate::series::CcSample;
use roce_proto::cc::CcMetrics;
use roce_proto::engine::Engine;
use roce_proto::time::Instant;
use roce_proto::wire::EthernetAddress;

pub use rc::{RcEngine, RcSetupError};
pub use stand_in::{StandInCounters, StandInEngine};

/// The MAC address the scenario engines derive from an IP address (switches route on IP, so
/// any fixed rule that both ends apply will do).
pub fn mac_of(ip: IpAddr) -> EthernetAddress {
    let key = ip_key(ip).to_be_bytes();
    EthernetAddress([0x02, 0x10, key[12], key[13], key[14], key[15]])
}

/// The engine of one scenario host.
#[derive(Debug)]
pub enum ScenarioEngine {
    /// The stand-in (no retransmission; optional CC from `roce_proto::cc`).
    StandIn(Box<StandInEngine>),
    /// The RC endpoint (queue pairs, CC and notification point of the real transport).
    Rc(Box<RcEngine>),
}

impl ScenarioEngine {
    /// The stand-in, if this is one.
    pub fn as_stand_in(&self) -> Option<&StandInEngine> {
        match self {
            ScenarioEngine::StandIn(t) => Some(t),
            ScenarioEngine::Rc(_) => None,
        }
    }

    /// The RC engine, if this is one.
    pub fn as_rc(&self) -> Option<&RcEngine> {
        match self {
            ScenarioEngine::Rc(r) => Some(r),
            ScenarioEngine::StandIn(_) => None,
        }
    }

    /// Ring AllReduce iteration marks.
    pub fn marks(&self) -> &[Instant] {
        match self {
            ScenarioEngine::StandIn(t) => t.marks(),
            ScenarioEngine::Rc(r) => r.marks(),
        }
    }

    /// Congestion-control samples of every flow with a controller.
    pub fn cc_samples(&self, out: &mut Vec<CcSample>) {
        match self {
            ScenarioEngine::StandIn(t) => t.cc_samples(out),
            ScenarioEngine::Rc(r) => r.cc_samples(out),
        }
    }

    /// Congestion-control metrics of the sender's flow `i`, if it runs a controller.
    pub fn cc_metrics(&self, i: usize) -> Option<CcMetrics> {
        match self {
            ScenarioEngine::StandIn(t) => t.cc_metrics(i),
            ScenarioEngine::Rc(r) => r.cc_metrics(i),
        }
    }

    /// When the sender's flow `i` completed, as the engine itself knows it (RC completions).
    pub fn completed_at(&self, i: usize) -> Option<Instant> {
        self.as_rc().and_then(|r| r.completed_at(i))
    }
}

impl Engine for ScenarioEngine {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        match self {
            ScenarioEngine::StandIn(t) => t.handle_frame(now, frame),
            ScenarioEngine::Rc(r) => r.handle_frame(now, frame),
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        match self {
            ScenarioEngine::StandIn(t) => t.handle_timeout(now),
            ScenarioEngine::Rc(r) => r.handle_timeout(now),
        }
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        match self {
            ScenarioEngine::StandIn(t) => t.poll_transmit(now, buf),
            ScenarioEngine::Rc(r) => r.poll_transmit(now, buf),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            ScenarioEngine::StandIn(t) => t.poll_timeout(),
            ScenarioEngine::Rc(r) => r.poll_timeout(),
        }
    }
}

/// In-order payload bytes a host has received, and the times each multiple of `every` bytes
/// was crossed (one mark per ring AllReduce iteration).
#[derive(Debug, Default)]
pub(crate) struct ReceivedBytes {
    /// Bytes so far.
    pub(crate) bytes: u64,
    every: Option<u64>,
    marks: Vec<Instant>,
}

impl ReceivedBytes {
    /// Marks every `bytes` (at least 1).
    pub(crate) fn mark_every(&mut self, bytes: u64) {
        self.every = Some(bytes.max(1));
    }

    /// `n` more bytes arrived at `now`.
    pub(crate) fn add(&mut self, now: Instant, n: u64) {
        let before = self.bytes;
        self.bytes += n;
        if let Some(m) = self.every {
            for _ in before / m..self.bytes / m {
                self.marks.push(now);
            }
        }
    }

    /// The marks so far.
    pub(crate) fn marks(&self) -> &[Instant] {
        &self.marks
    }
}
