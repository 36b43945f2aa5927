//! The engines scenarios put on fabric hosts, behind one enum so a scenario's fabric has a
//! single engine type: the real RC transport ([`RcEngine`], the default) or the stand-in
//! ([`StandInEngine`]), chosen by [`EngineKind`].
//!
//! Both only see frames and `now` through [`Engine`]; neither knows it runs in a fabric.

mod footprint;
pub mod rc;
pub mod stand_in;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::flows::collective::MemberGate;
use crate::record::series::CcSample;
use crate::record::telemetry::HostCounters;
use crate::switching::frame::ip_key;
use roce_proto::cc::CcMetrics;
use roce_proto::counters::RdmaCounters;
use roce_proto::engine::Engine;
use roce_proto::time::Instant;
use roce_proto::wire::EthernetAddress;

pub use footprint::FlowFootprint;
pub use rc::{QpLife, RcEngine, RcRecovery, RcSetupError};
pub use stand_in::{StandInCounters, StandInEngine};

/// The MAC address the scenario engines derive from an IP address (switches route on IP, so
/// any fixed rule that both ends apply will do).
pub fn mac_of(ip: IpAddr) -> EthernetAddress {
    let key = ip_key(ip).to_be_bytes();
    EthernetAddress([0x02, 0x10, key[12], key[13], key[14], key[15]])
}

/// Which engine a scenario runs on its hosts. In scenario files and on the command line:
/// `"rc"` or `"stand-in"` (also read under its old name, `"test"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EngineKind {
    /// The RC endpoint ([`RcEngine`]): queue pairs, retransmission, DCQCN and the notification
    /// point of the real transport.
    #[default]
    #[serde(rename = "rc")]
    Rc,
    /// The stand-in ([`StandInEngine`]): paced streams that never retransmit; faster.
    #[serde(rename = "stand-in", alias = "test")]
    StandIn,
}

impl EngineKind {
    /// Every kind, in the order names are listed.
    pub const ALL: [EngineKind; 2] = [EngineKind::Rc, EngineKind::StandIn];

    /// The name scenario files and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Rc => "rc",
            EngineKind::StandIn => "stand-in",
        }
    }
}

/// The stand-in's old name, still read so that older scenario files and command lines work.
const STAND_IN_ALIAS: &str = "test";

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no [`EngineKind`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("engine {0:?} is not \"rc\" or \"stand-in\"")]
pub struct UnknownEngine(pub String);

impl std::str::FromStr for EngineKind {
    type Err = UnknownEngine;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == STAND_IN_ALIAS {
            return Ok(EngineKind::StandIn);
        }
        EngineKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownEngine(s.to_owned()))
    }
}

/// How the RC engine's QPs recover lost packets, both ends of every flow alike. In scenario
/// files: `recovery = "go-back-n"` (the default) or `"selective-repeat"` (also read as
/// `"selective"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LossRecovery {
    /// IBA's go-back-N: a receiver drops what follows a gap; the sender resends from it on.
    #[default]
    #[serde(rename = "go-back-n")]
    GoBackN,
    /// IRN's selective repeat: a receiver places what arrives out of order and names it in its
    /// NAK; the sender resends only what is missing.
    #[serde(rename = "selective-repeat", alias = "selective")]
    SelectiveRepeat,
}

impl LossRecovery {
    /// Whether this is the default (go-back-N), which scenario files need not write.
    pub fn is_go_back_n(&self) -> bool {
        *self == LossRecovery::GoBackN
    }

    /// The transport's name for it.
    pub fn verbs(self) -> roce_proto::verbs::Recovery {
        match self {
            LossRecovery::GoBackN => roce_proto::verbs::Recovery::GoBackN,
            LossRecovery::SelectiveRepeat => roce_proto::verbs::Recovery::SelectiveRepeat,
        }
    }
}

/// What a host's transport says about one of its sending flows (the stand-in, which never
/// retransmits and cannot fail, says nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowTransport {
    /// Why the flow failed (its first error completion and its QP's state), if it did.
    pub error: Option<String>,
    /// How its sender recovered losses.
    pub recovery: Recovery,
}

/// How senders recovered from loss: per flow, and summed over a run's flows (serialized flat,
/// as `retransmitted`, `naks` and `timeouts`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Recovery {
    /// Request packets sent again.
    pub retransmitted: u64,
    /// NAKs received (sequence, RNR, access, invalid request).
    pub naks: u64,
    /// ACK timeouts that fired.
    pub timeouts: u64,
}

impl std::iter::Sum for Recovery {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Recovery::default(), |a, b| Recovery {
            retransmitted: a.retransmitted + b.retransmitted,
            naks: a.naks + b.naks,
            timeouts: a.timeouts + b.timeouts,
        })
    }
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

    /// When each iteration of the host's collective completed.
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

    /// What the transport says about the sender's flow `i`.
    pub fn flow_transport(&self, i: usize) -> FlowTransport {
        self.as_rc()
            .map(|r| r.flow_transport(i))
            .unwrap_or_default()
    }

    /// Request packets this host's responders received beyond the expected PSN
    /// (`out_of_sequence`: go-back-N drops them and NAKs) and again (`duplicate_request`), over
    /// all its QPs; zeros for the stand-in, which counts no sequence.
    pub fn sequence_counters(&self) -> (u64, u64) {
        self.as_rc().map_or((0, 0), |r| {
            let c = r.endpoint().rdma_counters();
            (c.out_of_sequence, c.duplicate_request)
        })
    }

    /// Selective repeat's counters over all this host's QPs: request packets its responders
    /// placed beyond the expected PSN (`out_of_order_placed`) and selective NAKs its requesters
    /// received (`selective_naks`); zeros for the stand-in.
    pub fn placement_counters(&self) -> (u64, u64) {
        self.as_rc().map_or((0, 0), |r| {
            let c = r.endpoint().rdma_counters();
            (c.out_of_order_placed, c.selective_naks)
        })
    }

    /// QPs of this host in the error state (0 for the stand-in, which has none).
    pub fn qp_errors(&self) -> u64 {
        self.as_rc().map_or(0, RcEngine::qp_errors)
    }

    /// The host's transport counters for telemetry (the stand-in has CNPs and CE marks only).
    pub fn host_counters(&self) -> HostCounters {
        match self {
            ScenarioEngine::Rc(r) => HostCounters::of(&r.endpoint().rdma_counters(), r.qp_errors()),
            ScenarioEngine::StandIn(t) => {
                let np = t.np_counters();
                let c = RdmaCounters {
                    np_ecn_marked_roce_packets: np.np_ecn_marked_roce_packets,
                    np_cnp_sent: np.np_cnp_sent,
                    rp_cnp_handled: t.counters.cnp_handled,
                    ..RdmaCounters::default()
                };
                HostCounters::of(&c, 0)
            }
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

/// In-order payload bytes a host has received, and its collective's gate (which counts the
/// collective's bytes per peer and marks each completed iteration).
#[derive(Debug, Default)]
pub(crate) struct ReceivedBytes {
    /// Bytes so far.
    pub(crate) bytes: u64,
    /// The gate of the collective the host is a member of.
    pub(crate) gate: Option<MemberGate>,
}

impl ReceivedBytes {
    /// `n` more bytes arrived at `now`, from the collective's in-slot `slot` if they belong to
    /// it.
    pub(crate) fn add(&mut self, now: Instant, slot: Option<usize>, n: u64) {
        self.bytes += n;
        if let (Some(g), Some(s)) = (&mut self.gate, slot) {
            g.on_receive(now, s, n);
        }
    }

    /// The collective's iteration marks so far.
    pub(crate) fn marks(&self) -> &[Instant] {
        self.gate.as_ref().map_or(&[], MemberGate::marks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Doc {
        #[serde(alias = "transport")]
        engine: EngineKind,
    }

    fn parse(text: &str) -> Result<EngineKind, String> {
        toml::from_str::<Doc>(text)
            .map(|d| d.engine)
            .map_err(|e| e.message().to_owned())
    }

    #[test]
    fn engine_kinds_read_rc_and_stand_in_by_either_key_and_name_the_choices_otherwise() {
        assert_eq!(parse("engine = \"rc\""), Ok(EngineKind::Rc));
        assert_eq!(parse("engine = \"stand-in\""), Ok(EngineKind::StandIn));
        // The stand-in's old name still reads, in files and on the command line.
        assert_eq!(parse("transport = \"test\""), Ok(EngineKind::StandIn));
        let err = parse("engine = \"tcp\"").unwrap_err();
        assert_eq!(
            err,
            "unknown variant `tcp`, expected one of `rc`, `stand-in`, `test`"
        );
        assert_eq!("test".parse(), Ok(EngineKind::StandIn));
        assert_eq!("stand-in".parse(), Ok(EngineKind::StandIn));
        assert_eq!(EngineKind::StandIn.to_string(), "stand-in");
        assert_eq!(
            "Rc".parse::<EngineKind>().unwrap_err().to_string(),
            "engine \"Rc\" is not \"rc\" or \"stand-in\""
        );
        for k in EngineKind::ALL {
            assert_eq!(k.to_string().parse(), Ok(k));
        }
    }
}
