//! What `roce perf`, `roce perf verbs-peer` and `roce pingpong` share: one DPDK port driven by the
//! runtime loop with a [`ResolvingEndpoint`] (endpoint + ARP/NDP) as its engine ([`Session`]),
//! and the out-of-band TCP exchange on a helper thread ([`exchange`]) so the poll loop keeps
//! answering ARP while the kernel's TCP stack does the talking. The port's options are
//! [`args`], opening it is [`device`], fault injection on it is [`faults`].
//! Not here: the tests themselves.

mod args;
mod device;
mod exchange;
mod faults;

use std::sync::mpsc::TryRecvError;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::{anyhow, bail, Context};

use roce::metrics::{Exposition, MetricsHub, PortMetrics, Publisher};
use roce_dpdk::clock::{Clock, MonotonicClock};
use roce_dpdk::lcore::shard::EndpointSnapshot;
use roce_dpdk::runtime::{Runtime, RuntimeConfig};
use roce_dpdk::{DpdkPort, Eal, MemifRole, Mempool};
use roce_proto::connect::RcOptions;
use roce_proto::endpoint::EndpointConfig;
use roce_proto::fault::FaultConfig;
use roce_proto::psn::Psn;
use roce_proto::resolving::{PeerQp, ResolutionEvent, ResolvingEndpoint};
use roce_proto::time::Instant;
use roce_proto::verbs::Mtu;

use crate::cli::output;

pub use args::{parse_mtu, PortArgs};
pub use device::open_device;
pub use exchange::{connect, gid_ip, Ask, Blocking, Connect, Oob, Req};
use faults::Faulty;

/// A DPDK port, the runtime loop and the host it drives.
pub struct Session {
    // Field order is drop order: the runtime (port) before the pool before EAL.
    runtime: Runtime<Faulty<DpdkPort>, MonotonicClock>,
    /// The endpoint with ARP/NDP.
    pub host: ResolvingEndpoint,
    clock: MonotonicClock,
    _metrics: Option<roce::metrics::server::MetricsServer>,
    hub: Arc<MetricsHub>,
    publisher: Publisher,
    device: String,
    _pool: Arc<Mempool>,
    _eal: Eal,
    /// How long a wait may last.
    pub timeout: StdDuration,
    faults_on: bool,
}

impl Session {
    /// Starts EAL with the port, brings it up for frames of `roce_mtu` payload.
    /// A memif port whose role `--port` leaves open takes `memif_role`.
    pub fn open(args: &PortArgs, roce_mtu: u32, memif_role: MemifRole) -> anyhow::Result<Session> {
        if args.cores.len() > 1 {
            bail!(
                "--cores {}: this command runs its QP on one core (--cores 1; roce perf's bandwidth tests take more)",
                args.cores
            );
        }
        let faults = args.faults.config()?;
        let device::Device {
            port,
            pool,
            eal,
            mac,
            ip,
        } = open_device(args, roce_mtu, 1, memif_role)?;
        let mut host = ResolvingEndpoint::new(EndpointConfig::ipv4(mac, ip));
        host.announce();
        let hub = Arc::new(MetricsHub::new());
        let metrics = args.metrics.start(&eal, &hub)?;
        let clock = MonotonicClock::new();
        let seed = args.faults.injector_seed();
        Ok(Session {
            device: port.info().name.clone(),
            runtime: Runtime::new(
                faults::wrap(port, faults, seed),
                clock,
                RuntimeConfig::default(),
            ),
            host,
            clock,
            _metrics: metrics,
            hub,
            publisher: Publisher::default(),
            _pool: pool,
            _eal: eal,
            timeout: StdDuration::from_secs(args.timeout.max(1)),
            faults_on: faults != FaultConfig::default(),
        })
    }

    /// The endpoint's counters as the metrics show them.
    fn exposition(&self) -> Exposition {
        Exposition {
            ports: vec![PortMetrics {
                device: self.device.clone(),
                snapshot: EndpointSnapshot::of(self.host.endpoint(), self.clock.now()),
            }],
            switch: None,
        }
    }

    /// What the fault injector did, one line (`faults: tx ... rx ...`).
    pub fn fault_summary(&self) -> String {
        faults::summary(self.runtime.port())
    }

    /// The counters users look at after a run (mlx5/rxe names), one line.
    pub fn counters_line(&self) -> String {
        let c = self.host.endpoint().counters();
        let q = c.qp;
        let np = self.host.endpoint().np_counters();
        format!(
            "counters: retransmitted_packets={} packet_seq_err={} local_ack_timeout_err={} \
             implied_nak_seq_err={} out_of_sequence={} duplicate_request={} rnr_nak_retry_err={} \
             send_rnr_err={} naks_sent={} np_ecn_marked_roce_packets={} np_cnp_sent={} \
             rp_cnp_handled={} error_completions={} out_of_order_placed={} selective_naks={}",
            q.retransmitted_packets,
            q.packet_seq_err,
            q.local_ack_timeout_err,
            q.implied_nak_seq_err,
            q.out_of_sequence,
            q.duplicate_request,
            q.rnr_nak_retry_err,
            q.send_rnr_err,
            q.naks_sent,
            np.np_ecn_marked_roce_packets,
            np.np_cnp_sent,
            q.rp_cnp_handled,
            q.error_completions,
            q.out_of_order_placed,
            q.selective_naks
        )
    }

    /// Says the counters (and the fault injector's, when it ran) on stderr.
    pub fn report_counters(&self) {
        output::note(self.counters_line());
        if self.faults_on {
            output::note(self.fault_summary());
        }
    }

    /// The loop's clock now.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// One turn of the loop (yielding the CPU when nothing moved).
    pub fn poll(&mut self) -> usize {
        let moved = self.runtime.poll_once(&mut self.host);
        let mut p = std::mem::take(&mut self.publisher);
        p.offer(&self.hub, || self.exposition());
        self.publisher = p;
        if moved == 0 {
            // Idle: let the peer process (often on the same cores, e.g. over taps) run.
            std::thread::yield_now();
        }
        moved
    }

    /// Keeps polling for `d` (lets the last ACKs leave before the port goes away).
    pub fn drain(&mut self, d: StdDuration) {
        let until = std::time::Instant::now() + d;
        while std::time::Instant::now() < until {
            self.poll();
        }
    }

    /// Polls until `f` returns `Some`, or fails after the timeout naming `what`.
    pub fn poll_until<T>(
        &mut self,
        what: &str,
        mut f: impl FnMut(&mut ResolvingEndpoint) -> anyhow::Result<Option<T>>,
    ) -> anyhow::Result<T> {
        let deadline = std::time::Instant::now() + self.timeout;
        loop {
            self.poll();
            if let Some(v) = f(&mut self.host)? {
                return Ok(v);
            }
            if std::time::Instant::now() > deadline {
                bail!("{what}: nothing within {} s", self.timeout.as_secs());
            }
        }
    }

    /// Connects each `(qpn, peer, sq_psn)` (RESET to RTS) and polls until ARP has resolved every
    /// peer; a peer that never answers is an error.
    pub fn connect_all(
        &mut self,
        qps: &[(u32, PeerQp, Psn)],
        opts: &RcOptions,
    ) -> anyhow::Result<()> {
        for (qpn, peer, sq_psn) in qps {
            let now = self.now();
            let _ = self
                .host
                .connect_qp(now, *qpn, peer, *sq_psn, opts)
                .context("connecting the QP")?;
        }
        let peer_ip = qps
            .first()
            .map_or_else(|| "?".into(), |q| q.1.ip.to_string());
        self.poll_until(&format!("resolving the peer {peer_ip} with ARP"), |h| {
            while let Some(ev) = h.poll_event() {
                if let ResolutionEvent::QpUnreachable { ip, .. } = ev {
                    bail!("the peer {ip} does not answer ARP");
                }
            }
            Ok(qps.iter().all(|q| !h.is_deferred(q.0)).then_some(()))
        })
    }

    /// [`Session::converse`] with nothing to do meanwhile but poll.
    pub fn ask(&mut self, oob: &Oob, req: Req) -> anyhow::Result<Vec<u8>> {
        self.converse(oob, req, |_| Ok(()))
    }

    /// Sends `req` to the out-of-band thread and polls (calling `each` every turn) until its
    /// answer comes.
    pub fn converse(
        &mut self,
        oob: &Oob,
        req: Req,
        mut each: impl FnMut(&mut ResolvingEndpoint) -> anyhow::Result<()>,
    ) -> anyhow::Result<Vec<u8>> {
        oob.tx
            .send(req)
            .map_err(|_| anyhow!("the TCP exchange thread has stopped"))?;
        loop {
            for _ in 0..64 {
                self.poll();
                each(&mut self.host)?;
            }
            match oob.rx.try_recv() {
                Ok(r) => return r.map_err(|e| anyhow!(e)),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => bail!("the TCP exchange thread has stopped"),
            }
        }
    }
}

impl Ask for Session {
    fn ask(&mut self, oob: &Oob, req: Req) -> anyhow::Result<Vec<u8>> {
        Session::ask(self, oob, req)
    }
}

/// Starts a server (no `server` address) or a client: the TCP side first ([`connect`]), then
/// the DPDK port at `mtu`, then the out-of-band thread. Returns the session and the exchange.
pub fn start(
    server: Option<&str>,
    tcp_port: u16,
    port: &PortArgs,
    mtu: Mtu,
) -> anyhow::Result<(Session, Oob)> {
    let connect = connect(server, tcp_port, port)?;
    let s = Session::open(port, mtu.bytes(), connect.memif_role())?;
    let oob = Oob::start(connect, s.timeout);
    Ok((s, oob))
}
