//! What runs on a shard: an engine the application reaches only through queues. [`ShardEngine`]
//! says what an application can hand a shard (work) and get back (completions, snapshots);
//! [`VerbsShard`] is it for an RC endpoint: posts in, work completions out, counter snapshots
//! for the metrics.

use std::collections::VecDeque;

use roce_proto::counters::RdmaCounters;
use roce_proto::endpoint::Endpoint;
use roce_proto::engine::Engine;
use roce_proto::resolving::ResolvingEndpoint;
use roce_proto::time::Instant;
use roce_proto::verbs::{CqHandle, RecvWr, SendWr, WorkCompletion};

/// An engine a shard can run: [`Engine`] plus what applications exchange with it.
pub trait ShardEngine: Engine + Send + 'static {
    /// A unit of work an application hands the shard (a post).
    type Work: Send + 'static;
    /// What the shard hands back (a completion).
    type Done: Send + 'static;
    /// A picture of the engine's state for the metrics.
    type Snapshot: Send + 'static;
    /// Takes one unit of work.
    fn apply(&mut self, now: Instant, work: Self::Work);
    /// The next thing to hand back, if any.
    fn poll_done(&mut self) -> Option<Self::Done>;
    /// The engine's state now.
    fn snapshot(&self, now: Instant) -> Self::Snapshot;
}

/// Gives the RC endpoint inside an engine.
pub trait HasEndpoint {
    /// The endpoint.
    fn endpoint(&self) -> &Endpoint;
    /// The endpoint, mutably.
    fn endpoint_mut(&mut self) -> &mut Endpoint;
}

impl HasEndpoint for Endpoint {
    fn endpoint(&self) -> &Endpoint {
        self
    }
    fn endpoint_mut(&mut self) -> &mut Endpoint {
        self
    }
}

impl HasEndpoint for ResolvingEndpoint {
    fn endpoint(&self) -> &Endpoint {
        ResolvingEndpoint::endpoint(self)
    }
    fn endpoint_mut(&mut self) -> &mut Endpoint {
        ResolvingEndpoint::endpoint_mut(self)
    }
}

/// A post an application hands a [`VerbsShard`].
#[derive(Clone, Debug)]
pub enum Verb {
    /// `post_send` on QP `qpn`.
    Send {
        /// The QP.
        qpn: u32,
        /// The work request.
        wr: SendWr,
    },
    /// `post_recv` on QP `qpn`.
    Recv {
        /// The QP.
        qpn: u32,
        /// The work request.
        wr: RecvWr,
    },
}

/// What a [`VerbsShard`] hands back: a work completion (its `qp_num` says the QP), or a post
/// the QP refused (with the work request's id).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Completion {
    /// A completion from one of the shard's reaped CQs.
    Work(WorkCompletion),
    /// A post refused (`qpn`, `wr_id`, the reason).
    Refused {
        /// The QP posted to.
        qpn: u32,
        /// The work request's id.
        wr_id: u64,
        /// Why (the QP's error, printed).
        why: &'static str,
    },
}

/// The congestion controller's state of one QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct CcState {
    /// Current rate, bit/s (DCQCN's RC).
    pub rate_bps: f64,
    /// Target rate, bit/s (DCQCN's RT).
    pub target_rate_bps: f64,
    /// DCQCN's alpha (congestion estimate, 0..=1).
    pub alpha: f64,
    /// Rate decreases.
    pub rate_cuts: u64,
    /// Rate increase events.
    pub rate_increases: u64,
    /// CNPs absorbed without a rate change.
    pub cnp_ignored: u64,
}

/// One QP in a snapshot.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct QpSnapshot {
    /// Local QP number.
    pub qpn: u32,
    /// The peer's QP number.
    pub dest_qpn: u32,
    /// Its counters (mlx5 / rxe names).
    pub counters: RdmaCounters,
    /// Its controller, when one is installed.
    pub cc: Option<CcState>,
    /// Work requests posted and not completed.
    pub send_queue: u64,
    /// How long its next frame still waits for the pacer, ns (0: may leave now).
    pub pacer_wait_ns: u64,
}

/// One endpoint's (or shard's) counters and QPs at an instant.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct EndpointSnapshot {
    /// The port's counters (mlx5 / rxe names).
    pub port: RdmaCounters,
    /// Bytes of frames sent.
    pub tx_bytes: u64,
    /// Bytes of frames received.
    pub rx_bytes: u64,
    /// Its QPs, by number.
    pub qps: Vec<QpSnapshot>,
}

impl EndpointSnapshot {
    /// The state of `ep` at `now`.
    pub fn of(ep: &Endpoint, now: Instant) -> Self {
        let mut qps = Vec::new();
        for qpn in ep.qpns() {
            let Some(qp) = ep.qp(qpn) else { continue };
            let cc = qp.cc_metrics().map(|m| CcState {
                rate_bps: m.rate.as_bps_f64(),
                target_rate_bps: m.target_rate.as_bps_f64(),
                alpha: m.alpha,
                rate_cuts: m.rate_cuts,
                rate_increases: m.rate_increases,
                cnp_ignored: m.rp_cnp_ignored,
            });
            let mut counters = RdmaCounters::of_qp(qp.counters());
            counters.rp_cnp_ignored = cc.map_or(0, |c| c.cnp_ignored);
            qps.push(QpSnapshot {
                qpn,
                dest_qpn: qp.dest_qpn(),
                counters,
                cc,
                send_queue: qp.send_queue_len() as u64,
                pacer_wait_ns: qp.next_departure().saturating_since(now).as_nanos(),
            });
        }
        let mut port = ep.rdma_counters();
        port.rp_cnp_ignored = qps.iter().map(|q| q.counters.rp_cnp_ignored).sum();
        let c = ep.counters();
        EndpointSnapshot {
            port,
            tx_bytes: c.tx_bytes,
            rx_bytes: c.rx_bytes,
            qps,
        }
    }

    /// Adds `other` (another shard of the same port): counters summed, QPs appended.
    pub fn merge(&mut self, other: EndpointSnapshot) {
        self.port.accumulate(&other.port);
        self.tx_bytes += other.tx_bytes;
        self.rx_bytes += other.rx_bytes;
        self.qps.extend(other.qps);
        self.qps.sort_by_key(|q| q.qpn);
    }
}

/// An RC endpoint (plain or resolving) run as a shard: [`Verb`]s in, [`Completion`]s out from
/// the CQs it was told to reap.
#[derive(Debug)]
pub struct VerbsShard<E> {
    engine: E,
    reap: Vec<CqHandle>,
    refused: VecDeque<Completion>,
}

impl<E: HasEndpoint> VerbsShard<E> {
    /// A shard running `engine`, reaping no CQ yet.
    pub fn new(engine: E) -> Self {
        VerbsShard {
            engine,
            reap: Vec::new(),
            refused: VecDeque::new(),
        }
    }

    /// The engine (control path: QPs, MRs, connections).
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The engine, mutably.
    pub fn engine_mut(&mut self) -> &mut E {
        &mut self.engine
    }

    /// The engine back.
    pub fn into_engine(self) -> E {
        self.engine
    }

    /// Creates a CQ whose completions the shard hands to the application.
    pub fn create_reaped_cq(&mut self, capacity: usize) -> CqHandle {
        let cq = self.engine.endpoint_mut().create_cq(capacity);
        self.reap.push(cq);
        cq
    }
}

impl<E: Engine> Engine for VerbsShard<E> {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.engine.handle_frame(now, frame);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.engine.handle_timeout(now);
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.engine.poll_transmit(now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.engine.poll_timeout()
    }
}

impl<E: Engine + HasEndpoint + Send + 'static> ShardEngine for VerbsShard<E> {
    type Work = Verb;
    type Done = Completion;
    type Snapshot = EndpointSnapshot;

    fn apply(&mut self, _now: Instant, work: Verb) {
        let ep = self.engine.endpoint_mut();
        let (qpn, wr_id, r) = match work {
            Verb::Send { qpn, wr } => (qpn, wr.wr_id, ep.post_send(qpn, wr)),
            Verb::Recv { qpn, wr } => (qpn, wr.wr_id, ep.post_recv(qpn, wr)),
        };
        if let Err(e) = r {
            tracing::debug!(qpn, wr_id, error = %e, "post refused");
            self.refused.push_back(Completion::Refused {
                qpn,
                wr_id,
                why: "the QP refused the post",
            });
        }
    }

    fn poll_done(&mut self) -> Option<Completion> {
        if let Some(r) = self.refused.pop_front() {
            return Some(r);
        }
        let ep = self.engine.endpoint_mut();
        self.reap
            .iter()
            .find_map(|&cq| ep.poll_cq_one(cq))
            .map(Completion::Work)
    }

    fn snapshot(&self, now: Instant) -> EndpointSnapshot {
        EndpointSnapshot::of(self.engine.endpoint(), now)
    }
}

/// Connects QP `qa` on shard `a` with QP `qb` on shard `b` (shards of two endpoints, RESET to RTS
/// both ways, first PSNs `o.a_psn` and `o.b_psn`), as `roce_proto::connect::connect_rc` does for
/// two endpoints at hand: each side's address vector from the other's configuration. Control
/// calls: the lcores keep running.
pub fn connect_across<E>(
    a: &super::ShardHandle<VerbsShard<E>>,
    qa: u32,
    b: &super::ShardHandle<VerbsShard<E>>,
    qb: u32,
    o: &roce_proto::connect::RcOptions,
) -> Result<(), super::LcoreError>
where
    E: Engine + HasEndpoint + Send + 'static,
{
    let ca = a.call(|e, _| *e.engine().endpoint().config())?;
    let cb = b.call(|e, _| *e.engine().endpoint().config())?;
    let o = *o;
    for (h, qpn, local, peer, peer_qpn, sq, rq) in [
        (a, qa, ca, cb, qb, o.a_psn, o.b_psn),
        (b, qb, cb, ca, qa, o.b_psn, o.a_psn),
    ] {
        let av = roce_proto::connect::address_vector(&local, &peer)?;
        h.call(move |e, _| {
            for attr in o.attrs_to_rts(peer_qpn, av, rq, sq) {
                e.engine_mut().endpoint_mut().modify_qp(qpn, &attr)?;
            }
            Ok::<(), roce_proto::qp::QpError>(())
        })??;
    }
    Ok(())
}
