//! What a run's flows hold, counted rather than measured (no RSS): the QPs the RC engines made,
//! retired and held at most at once, their pooled CQs, and the bytes a running and a finished
//! flow take by the sizes of the records that stand for them.
//!
//! Not here: when QPs are made and retired ([`super::rc`]).

use std::mem::size_of;

use serde::Serialize;

use super::rc::{flow_record_bytes, QpLife};
use super::ScenarioEngine;
use crate::net::fabric::Fabric;
use crate::record::flow_meter::{FlowProgress, FlowSpec};
use crate::HostId;
use roce_proto::qp::QueuePair;
use roce_proto::verbs::CompletionQueue;

/// Bytes of the endpoint's bookkeeping per QP number, made or not: the QP's box pointer, its
/// hold, its ready flag and its cached deadline.
const SLOT_BYTES: usize = size_of::<Option<Box<QueuePair>>>() + 2 + size_of::<Option<u64>>() * 2;

/// The flows of a run and what they held (RC engines; the stand-in holds no QPs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FlowFootprint {
    /// Flows the run had.
    pub flows: u64,
    /// QPs over every host: made, retired, live at the end, peak (summed over hosts: an upper
    /// bound on the fabric's), not made yet, CQs made and reused, regions.
    pub qps: QpLife,
    /// Packets that arrived for a retired QP and were dropped (the endpoints'
    /// `drops.retired_qp`: stale CNPs, duplicate ACKs, retransmissions after a receiver's
    /// linger).
    pub stale_packets: u64,
    /// Bytes a running flow holds beyond its finished record: its two QPs (their queues'
    /// entries, allocated as they fill, not counted) and its sender's CQ. Its receiver's QP
    /// stays [`LINGER`](super::rc::LINGER) after the flow's last packet.
    pub live_flow_bytes: u64,
    /// Bytes a flow holds before it starts and once it ended: its sender's record, its
    /// flow-meter spec and progress, and the endpoints' slots for its two QP numbers.
    pub finished_flow_bytes: u64,
}

impl FlowFootprint {
    /// The footprint of `fabric`'s RC engines; `None` when it has none.
    pub fn of(fabric: &Fabric<ScenarioEngine>) -> Option<FlowFootprint> {
        let mut qps = QpLife::default();
        let (mut any, mut stale_packets) = (false, 0);
        for h in 0..fabric.host_count() {
            if let Some(rc) = fabric.engine(HostId(h)).and_then(ScenarioEngine::as_rc) {
                qps += rc.qp_life();
                stale_packets += rc.endpoint().counters().drops.retired_qp;
                any = true;
            }
        }
        let meter = &fabric.flow_meter;
        let names: usize = meter.specs.iter().map(|s| s.name.capacity()).sum();
        let flows = meter.specs.len();
        let names = names.checked_div(flows).unwrap_or(0);
        let qp = size_of::<QueuePair>();
        let record = flow_record_bytes()
            + size_of::<FlowSpec>()
            + names
            + size_of::<FlowProgress>()
            + 2 * SLOT_BYTES;
        any.then_some(FlowFootprint {
            flows: flows as u64,
            qps,
            stale_packets,
            live_flow_bytes: (2 * qp + size_of::<CompletionQueue>()) as u64,
            finished_flow_bytes: record as u64,
        })
    }

    /// `flows: 99622, QPs made 199244, retired 99622, at most 5120 live; ...`.
    pub fn line(&self) -> String {
        let q = &self.qps;
        format!(
            "flows {}: QPs made {}, retired {}, at most {} live (hosts' peaks summed); CQs made {}, \
             reused {}; {} stale packets for retired QPs; {} B per live flow, {} B per finished flow",
            self.flows,
            q.opened,
            q.retired,
            q.peak_live,
            q.cqs_made,
            q.cqs_reused,
            self.stale_packets,
            self.live_flow_bytes,
            self.finished_flow_bytes,
        )
    }
}
