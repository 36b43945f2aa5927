//! A fabric host running the real RC transport: an [`Endpoint`] with one connected QP per flow,
//! kept busy by posting RDMA WRITEs (a few outstanding), and the ECN notification point of
//! [`crate::ecn`] answering CE-marked requests with CNPs. Completions come from the endpoint's
//! CQs, so retransmission (go-back-N, timeouts) is the transport's own.
//!
//! QPs are connected as `driver::loopback::connect_rc` does (traffic class 0, so priority 0 in
//! the fabric). Congestion control inside the endpoint is the transport's business; this host
//! only drives it.

use std::collections::VecDeque;
use std::net::IpAddr;

use crate::driver::loopback::{connect_rc, RcOptions};
use crate::driver::Engine;
use crate::ecn::NotificationPoint;
use crate::endpoint::{Endpoint, EndpointConfig};
use crate::time::{Duration, Instant};
use crate::verbs::{AccessFlags, CqHandle, Mtu, SendWr, Sge, WcStatus, WrOpcode};
use crate::wire::{
    ethernet, parse_frame_unverified, Ecn, EtherType, EthernetAddress, IpRepr, RoceRepr,
};

use super::testing::mac_of;

/// WRITEs kept outstanding per flow.
const DEPTH: u32 = 4;

#[derive(Debug)]
struct RcFlow {
    qpn: u32,
    cq: CqHandle,
    lkey: u32,
    addr: u64,
    msg: u32,
    remote_addr: u64,
    rkey: u32,
    total: Option<u64>,
    start: Instant,
    posted: u64,
    completed: u64,
    outstanding: u32,
    done_at: Option<Instant>,
    errors: u64,
}

/// Who is at the other end of a local QP (for CNPs).
#[derive(Clone, Copy, Debug)]
struct Peer {
    local_qpn: u32,
    ip: IpAddr,
    mac: EthernetAddress,
    qpn: u32,
}

/// A host whose engine is the RC [`Endpoint`].
#[derive(Debug)]
pub struct RcHost {
    ep: Endpoint,
    ip: IpAddr,
    flows: Vec<RcFlow>,
    peers: Vec<Peer>,
    np: Option<NotificationPoint>,
    cnps: VecDeque<Peer>,
}

/// Why two RC hosts could not be connected.
#[derive(Debug, thiserror::Error)]
pub enum RcSetupError {
    /// Only IPv4 hosts are set up here.
    #[error("rc hosts need IPv4 addresses, got {0}")]
    NotIpv4(IpAddr),
    /// The path MTU is not an IB MTU.
    #[error("mtu {0} is not one of 256, 512, 1024, 2048, 4096")]
    BadMtu(usize),
    /// The transport refused a QP or MR operation.
    #[error("rc setup: {0}")]
    Qp(String),
}

impl RcHost {
    /// A host at `ip` (IPv4) with no QPs; CE-marked requests trigger CNPs at most once per
    /// `cnp_interval` per QP (`None`: no CNPs).
    pub fn new(ip: IpAddr, cnp_interval: Option<Duration>) -> Result<Self, RcSetupError> {
        let IpAddr::V4(v4) = ip else {
            return Err(RcSetupError::NotIpv4(ip));
        };
        let ep = Endpoint::new(EndpointConfig::ipv4(mac_of(ip), v4));
        Ok(RcHost {
            ep,
            ip,
            flows: Vec::new(),
            peers: Vec::new(),
            np: cnp_interval.map(NotificationPoint::new),
            cnps: VecDeque::new(),
        })
    }

    /// Connects a QP on `src` to one on `dst` and makes `src` WRITE `total` bytes (forever when
    /// `None`) in `message` byte messages from `start`. Returns the QPN on `dst` (what the
    /// fabric's tap follows) and the flow's index on `src`.
    pub fn connect(
        src: &mut RcHost,
        dst: &mut RcHost,
        mtu: usize,
        message: u32,
        total: Option<u64>,
        start: Instant,
    ) -> Result<(u32, usize), RcSetupError> {
        let qp_err = |e: &dyn std::fmt::Display| RcSetupError::Qp(e.to_string());
        let opts = RcOptions {
            mtu: Mtu::from_bytes(mtu as u32).ok_or(RcSetupError::BadMtu(mtu))?,
            // 4.096 us * 2^6 = 262 us: tail losses recover within a short run.
            timeout: 6,
            ..RcOptions::default()
        };
        let (a, b) = connect_rc(&mut src.ep, &mut dst.ep, &opts).map_err(|e| qp_err(&e))?;
        let local = src
            .ep
            .reg_mr(a.pd, message as usize, AccessFlags::LOCAL_WRITE);
        let remote = dst.ep.reg_mr(
            b.pd,
            message as usize,
            AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
        );
        src.peers.push(Peer {
            local_qpn: a.qpn,
            ip: dst.ip,
            mac: mac_of(dst.ip),
            qpn: b.qpn,
        });
        dst.peers.push(Peer {
            local_qpn: b.qpn,
            ip: src.ip,
            mac: mac_of(src.ip),
            qpn: a.qpn,
        });
        src.flows.push(RcFlow {
            qpn: a.qpn,
            cq: a.cq,
            lkey: local.lkey,
            addr: local.addr,
            msg: message,
            remote_addr: remote.addr,
            rkey: remote.rkey,
            total,
            start,
            posted: 0,
            completed: 0,
            outstanding: 0,
            done_at: None,
            errors: 0,
        });
        Ok((b.qpn, src.flows.len() - 1))
    }

    /// The endpoint (counters, QPs).
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    /// When flow `i` (on this sender) had every byte acknowledged, if it is finite and done.
    pub fn completed_at(&self, i: usize) -> Option<Instant> {
        self.flows.get(i)?.done_at
    }

    /// Bytes of flow `i` whose WRITEs completed successfully.
    pub fn completed_bytes(&self, i: usize) -> u64 {
        self.flows.get(i).map_or(0, |f| f.completed)
    }

    /// Work completions with an error status, over all flows.
    pub fn completion_errors(&self) -> u64 {
        self.flows.iter().map(|f| f.errors).sum()
    }

    /// Reaps completions and posts WRITEs up to the window.
    fn drive(&mut self, now: Instant) {
        for f in &mut self.flows {
            while let Some(wc) = self.ep.poll_cq_one(f.cq) {
                f.outstanding = f.outstanding.saturating_sub(1);
                if wc.status == WcStatus::Success {
                    f.completed += u64::from(wc.byte_len.max(1)).min(u64::from(f.msg));
                } else {
                    f.errors += 1;
                }
            }
            if f.done_at.is_none() && f.total.is_some_and(|t| f.completed >= t) {
                f.done_at = Some(now);
            }
            if now < f.start {
                continue;
            }
            while f.outstanding < DEPTH && f.total.map_or(true, |t| f.posted < t) {
                let len = f
                    .total
                    .map_or(u64::from(f.msg), |t| (t - f.posted).min(u64::from(f.msg)));
                let wr = SendWr::new(
                    f.posted,
                    WrOpcode::RdmaWrite {
                        remote_addr: f.remote_addr,
                        rkey: f.rkey,
                    },
                    Sge {
                        addr: f.addr,
                        length: len as u32,
                        lkey: f.lkey,
                    },
                );
                if self.ep.post_send(f.qpn, wr).is_err() {
                    f.errors += 1;
                    break;
                }
                f.posted += len;
                f.outstanding += 1;
            }
        }
    }

    fn build_cnp(&self, to: &Peer, buf: &mut [u8]) -> Option<usize> {
        let eth = ethernet::Repr {
            dst: to.mac,
            src: mac_of(self.ip),
            vlan: None,
            ethertype: EtherType::Ipv4,
        };
        let ip = IpRepr::new_roce(self.ip, to.ip, 26, Ecn::NotEct);
        RoceRepr::cnp(eth, ip, 0xc000, to.qpn).emit(&[], buf).ok()
    }
}

impl Engine for RcHost {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        if let Some(np) = &mut self.np {
            if let Ok(p) = parse_frame_unverified(frame) {
                let r = &p.repr;
                if r.ip.ecn() == Ecn::Ce && r.bth.opcode.is_request() {
                    let local = r.bth.dest_qpn;
                    if let Some(peer) = self.peers.iter().find(|p| p.local_qpn == local) {
                        if np.on_ce(now, local, peer.qpn) {
                            self.cnps.push_back(*peer);
                        }
                    }
                }
            }
        }
        self.ep.handle_frame(now, frame);
        self.drive(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.ep.handle_timeout(now);
        self.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some(peer) = self.cnps.pop_front() {
            if let Some(np) = &mut self.np {
                let _ = np.poll_cnp(now);
            }
            if let Some(n) = self.build_cnp(&peer, buf) {
                return Some(n);
            }
        }
        self.ep.poll_transmit(now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if !self.cnps.is_empty() {
            return Some(Instant::ZERO);
        }
        let start = self
            .flows
            .iter()
            .filter(|f| f.posted == 0 && f.outstanding == 0)
            .map(|f| f.start)
            .min();
        match (self.ep.poll_timeout(), start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
