//! A passive tap on every host NIC (reading BTH fields through the wire views, no ICRC check): counts in-order payload bytes per registered flow (goodput,
//! completion time) and the CNPs hosts send and receive. It reads frames; it never changes them,
//! and the engines never know it is there.

use serde::Serialize;

use super::frame::{ip_key, BthInfo, IpInfo, IpKey, MixMap};
use roce_proto::psn::Psn;
use roce_proto::time::Instant;
use roce_proto::wire::Opcode;

/// Index of a registered flow.
pub type FlowId = usize;

/// A flow the tap follows: RoCE packets with payload from `src_ip` to queue pair `dst_qpn` on
/// the receiving host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlowSpec {
    /// Label for reports.
    pub name: String,
    /// Sending host index.
    pub src_host: usize,
    /// Index of this flow among its sender's flows.
    pub src_index: usize,
    /// Receiving host index.
    pub dst_host: usize,
    /// The sender's IP address.
    pub src_ip: std::net::IpAddr,
    /// Destination QP number on the receiver.
    pub dst_qpn: u32,
    /// Bytes after which the flow counts as complete, if it is finite.
    pub size_bytes: Option<u64>,
    /// When the flow's sender was told to start (for completion times), ns.
    pub start_ns: u64,
}

/// What the tap saw of one flow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlowProgress {
    /// Payload bytes of packets whose PSN advanced the flow (duplicates from retransmission are
    /// not counted twice; a gap is skipped, so a lost packet is simply missing).
    pub bytes: u64,
    /// Payload bytes received before the measurement window opened.
    pub bytes_at_warmup: u64,
    /// First payload byte seen, ns.
    pub first_ns: Option<u64>,
    /// Last payload byte seen, ns.
    pub last_ns: Option<u64>,
    /// When `size_bytes` was reached, ns.
    pub completed_ns: Option<u64>,
    next_psn: Option<u32>,
}

/// Counts per flow and CNPs, fed by the fabric at each host NIC.
#[derive(Clone, Debug, Default)]
pub struct FlowTap {
    /// Registered flows.
    pub specs: Vec<FlowSpec>,
    /// Progress, indexed like `specs`.
    pub progress: Vec<FlowProgress>,
    index: MixMap<(usize, IpKey, u32), FlowId>,
    /// CNPs sent by hosts.
    pub cnp_sent: u64,
    /// CNPs received by hosts.
    pub cnp_received: u64,
}

impl FlowTap {
    /// Follows a new flow.
    pub fn register(&mut self, spec: FlowSpec) -> FlowId {
        let id = self.specs.len();
        self.index
            .insert((spec.dst_host, ip_key(spec.src_ip), spec.dst_qpn), id);
        self.specs.push(spec);
        self.progress.push(FlowProgress::default());
        id
    }

    /// A frame left a host (`bth`: its BTH fields, if it is RoCEv2; see [`bth_info`]).
    ///
    /// [`bth_info`]: super::frame::bth_info
    pub fn on_tx(&mut self, bth: Option<&BthInfo>) {
        if bth.is_some_and(|b| b.opcode == Opcode::CNP) {
            self.cnp_sent += 1;
        }
    }

    /// A frame whose IP and BTH fields are `ip` and `bth` reached host `host` at `now`.
    pub fn on_rx(&mut self, host: usize, now: Instant, ip: Option<&IpInfo>, bth: Option<&BthInfo>) {
        let (Some(ip), Some(bth)) = (ip, bth) else {
            return;
        };
        if bth.opcode == Opcode::CNP {
            self.cnp_received += 1;
            return;
        }
        if bth.payload_len == 0 || self.index.is_empty() {
            return;
        }
        let Some(&id) = self.index.get(&(host, ip.src.key(), bth.dest_qpn)) else {
            return;
        };
        let (Some(prog), Some(spec)) = (self.progress.get_mut(id), self.specs.get(id)) else {
            return;
        };
        let psn = bth.psn;
        if prog
            .next_psn
            .is_some_and(|n| psn.cmp_serial(Psn::new(n)).is_lt())
        {
            return; // a duplicate (retransmission): already counted
        }
        prog.next_psn = Some(psn.add(1).value());
        let t = now.as_nanos();
        prog.bytes += bth.payload_len as u64;
        prog.first_ns.get_or_insert(t);
        prog.last_ns = Some(t);
        if prog.completed_ns.is_none() && spec.size_bytes.is_some_and(|s| prog.bytes >= s) {
            prog.completed_ns = Some(t);
        }
    }

    /// Opens the measurement window: bytes so far become warm-up bytes.
    pub fn mark_warmup(&mut self) {
        for p in &mut self.progress {
            p.bytes_at_warmup = p.bytes;
        }
    }
}
