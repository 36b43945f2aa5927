//! What `roce perf` and `roce pingpong` share: one DPDK port driven by the runtime loop with a
//! [`ResolvingEndpoint`] (endpoint + ARP/NDP) as its engine, and the out-of-band TCP exchange on a helper
//! thread so the poll loop keeps answering ARP while the kernel's TCP stack does the talking.
//! Not here: the tests themselves.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, ToSocketAddrs, UdpSocket};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::{anyhow, bail, Context};
use clap::Args;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use roce::oob::tcp::{every_interface_warning, ExchangeError, OobStream, Timeouts};
use roce_dpdk::clock::{Clock, MonotonicClock};
use roce_dpdk::runtime::{Runtime, RuntimeConfig};
use roce_dpdk::{
    DpdkError, DpdkPort, Eal, EalConfig, Mempool, MempoolConfig, PortConfig, PortSpec,
};
use roce_proto::connect::RcOptions;
use roce_proto::endpoint::EndpointConfig;
use roce_proto::fault::FaultConfig;
use roce_proto::psn::{Psn, PSN_MASK};
use roce_proto::resolving::{PeerQp, ResolutionEvent, ResolvingEndpoint};
use roce_proto::time::Instant;
use roce_proto::verbs::Mtu;
use roce_proto::wire::EthernetAddress;

use super::faults::Faulty;
use crate::cli::metrics::MetricsArgs;
use roce::metrics::{Exposition, MetricsHub, PortMetrics, Publisher};
use roce_dpdk::lcore::shard::EndpointSnapshot;
use roce_dpdk::lcore::Cores;

/// The DPDK port options of `roce perf` and `roce pingpong`.
#[derive(Args, Debug, Clone)]
pub struct PortArgs {
    /// DPDK port: null | ring | tap[:IFNAME] | af_packet:IFNAME | pci:ADDRESS.
    #[arg(long, default_value = "tap")]
    pub port: PortSpec,
    /// A raw DPDK virtual device instead of --port (e.g. "net_tap0,iface=t0"; becomes
    /// --vdev=SPEC, and the port it creates is used).
    #[arg(long, conflicts_with = "port")]
    pub vdev: Option<String>,
    /// Extra EAL arguments (e.g. "-l 1"; --no-huge/--in-memory/-d are added when needed).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub eal: String,
    /// perftest's GID index (-x). Accepted for command-line compatibility: a roce port has one
    /// GID, the one built from --ip (IPv4-mapped for IPv4), whatever the index.
    #[arg(short = 'x', long = "gid-index", default_value_t = 0)]
    pub gid_index: u32,
    /// Our IPv4 address on the port, ADDR/LEN (e.g. 198.18.0.1/15).
    #[arg(long)]
    pub ip: String,
    /// Our MAC address (default: the port's).
    #[arg(long)]
    pub mac: Option<String>,
    /// The peer's MAC address (default: resolved with ARP).
    #[arg(long)]
    pub peer_mac: Option<String>,
    /// Server: the address to listen on for the TCP exchange (default: this host's address on
    /// --ip's network, else 127.0.0.1; 0.0.0.0 listens on every interface and says so).
    #[arg(long)]
    pub bind: Option<IpAddr>,
    /// Seconds any single wait may last (TCP connect/accept, ARP, each whole message of the
    /// peer; at most a day).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub timeout: u64,
    /// Fraction of frames dropped, each direction (0..1): fault injection on our port.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Fraction of frames duplicated, each direction.
    #[arg(long, default_value_t = 0.0)]
    pub dup: f64,
    /// Fraction of frames held back behind later ones, each direction.
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Fraction of frames with a flipped bit, each direction.
    #[arg(long, default_value_t = 0.0)]
    pub corrupt: f64,
    /// Seed of the starting PSNs and of the fault injector, for a run that repeats (default:
    /// PSNs from the OS-seeded random generator, faults from seed 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Lcores: a count (2) or CPUs (0,2-3). With more than one, the port gets a queue pair per
    /// lcore and the QPs (`-q`) are spread over them (bandwidth tests).
    #[arg(long, alias = "lcores", default_value = "1")]
    pub cores: Cores,
    /// Live metrics.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// The fault injector's seed without `--seed`.
const DEFAULT_FAULT_SEED: u64 = 1;

/// Starting PSNs: unpredictable to anyone off the host (from the OS-seeded CSPRNG, so a blind
/// peer cannot guess the window of a QP), or reproducible from `--seed`.
pub struct PsnSource(StdRng);

impl PsnSource {
    /// From `seed`, or from the OS when there is none.
    pub fn new(seed: Option<u64>) -> Self {
        // Its own stream: the fault injector draws from the same seed.
        const PSN_STREAM: u64 = 0x5053_4e73_7472_6d21;
        PsnSource(match seed {
            Some(seed) => StdRng::seed_from_u64(seed ^ PSN_STREAM),
            None => rand::make_rng(),
        })
    }

    /// The next starting PSN (24 bits).
    pub fn next_psn(&mut self) -> Psn {
        Psn::new(self.0.random_range(0..=PSN_MASK))
    }
}

impl PortArgs {
    /// The fault knobs, checked.
    pub fn faults(&self) -> anyhow::Result<FaultConfig> {
        let faults = FaultConfig {
            loss: self.loss,
            duplicate: self.dup,
            reorder: self.reorder,
            corrupt: self.corrupt,
        };
        faults.check()?;
        Ok(faults)
    }

    /// `--peer-mac`, parsed.
    pub fn peer_mac(&self) -> anyhow::Result<Option<EthernetAddress>> {
        self.peer_mac.as_deref().map(parse_mac).transpose()
    }

    /// Where starting PSNs come from (`--seed`).
    pub fn psns(&self) -> PsnSource {
        PsnSource::new(self.seed)
    }

    /// Where a server listens: `--bind`, else this host's own address on the RoCE port's
    /// network (the kernel's source address toward `--ip`, when it lies in `--ip`'s prefix),
    /// else loopback. Never every interface unless asked, and then with a warning.
    pub fn bind_addr(&self) -> anyhow::Result<IpAddr> {
        if let Some(addr) = self.bind {
            return Ok(addr);
        }
        let (ip, prefix) = parse_ip_prefix(&self.ip)?;
        let local = local_addr_toward(ip).filter(|l| same_network(*l, ip, prefix));
        Ok(IpAddr::V4(local.unwrap_or(Ipv4Addr::LOCALHOST)))
    }
}

/// The address the kernel would send from toward `ip` (a UDP `connect` picks the route and
/// sends nothing).
fn local_addr_toward(ip: Ipv4Addr) -> Option<Ipv4Addr> {
    let sock = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    sock.connect((ip, 9)).ok()?;
    match sock.local_addr().ok()?.ip() {
        IpAddr::V4(v4) if !v4.is_unspecified() => Some(v4),
        _ => None,
    }
}

/// Whether `a` and `b` share their first `prefix` bits.
fn same_network(a: Ipv4Addr, b: Ipv4Addr, prefix: u8) -> bool {
    let mask = u32::MAX
        .checked_shl(32 - u32::from(prefix.min(32)))
        .unwrap_or(0);
    u32::from(a) & mask == u32::from(b) & mask
}

/// A path MTU given with `-m`.
pub fn parse_mtu(bytes: u32) -> anyhow::Result<Mtu> {
    Mtu::from_bytes(bytes)
        .ok_or_else(|| anyhow!("-m {bytes}: the MTU must be 256, 512, 1024, 2048 or 4096"))
}

/// Parses `ADDR/LEN`.
pub fn parse_ip(text: &str) -> anyhow::Result<Ipv4Addr> {
    parse_ip_prefix(text).map(|(ip, _)| ip)
}

/// Parses `ADDR/LEN` into the address and the prefix length (32 without one).
fn parse_ip_prefix(text: &str) -> anyhow::Result<(Ipv4Addr, u8)> {
    let (addr, len) = text.split_once('/').unwrap_or((text, "32"));
    let ip: Ipv4Addr = addr
        .parse()
        .with_context(|| format!("--ip {text:?}: not an IPv4 address"))?;
    let prefix = match len.parse::<u8>() {
        Ok(l) if l <= 32 => l,
        _ => bail!("--ip {text:?}: prefix length must be 0..=32"),
    };
    if ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() {
        bail!("--ip {text:?}: not a unicast address");
    }
    Ok((ip, prefix))
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(text: &str) -> anyhow::Result<EthernetAddress> {
    let parts: Vec<u8> = text
        .split(':')
        .map(|p| u8::from_str_radix(p, 16))
        .collect::<Result<_, _>>()
        .map_err(|_| anyhow!("{text:?} is not a MAC address"))?;
    let bytes: [u8; 6] = parts
        .try_into()
        .map_err(|_| anyhow!("{text:?} is not a MAC address (six bytes)"))?;
    let mac = EthernetAddress(bytes);
    if mac.is_multicast() || bytes == [0; 6] {
        bail!("{text:?} is not a unicast MAC address");
    }
    Ok(mac)
}

/// Our default MAC. A tap or af_packet port's MAC is the kernel interface's (a bridge delivers
/// frames for it to the kernel), so we take a different, locally administered one derived from
/// it; a NIC's MAC is ours.
fn own_mac(spec: &PortSpec, port_mac: [u8; 6]) -> EthernetAddress {
    let mut m = port_mac;
    if matches!(spec, PortSpec::Tap(_) | PortSpec::AfPacket(_)) {
        m[0] = (m[0] | 0x02) & !0x01;
        m[1] ^= 0x5a;
    }
    EthernetAddress(m)
}

/// Resolves the server's TCP address.
pub fn server_addr(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve server address {host:?}"))?
        .next()
        .ok_or_else(|| anyhow!("server address {host:?} has no IP address"))
}

/// A started DPDK port with everything a session needs around it.
pub struct Device {
    // Field order is drop order: the port before the pool before EAL.
    /// The port (queue 0; split it for more lcores).
    pub port: DpdkPort,
    /// Its mbuf pool.
    pub pool: Arc<Mempool>,
    /// EAL.
    pub eal: Eal,
    /// Our MAC on it.
    pub mac: EthernetAddress,
    /// Our IPv4 address.
    pub ip: Ipv4Addr,
}

/// Starts EAL with the port of `args` and brings it up with `queues` queue pairs for frames of
/// `roce_mtu` payload.
pub fn open_device(args: &PortArgs, roce_mtu: u32, queues: u16) -> anyhow::Result<Device> {
    let ip = parse_ip(&args.ip)?;
    let mac = args.mac.as_deref().map(parse_mac).transpose()?;
    let mut eal_args = crate::cli::port::quiet_eal_args(&args.eal);
    let label = match &args.vdev {
        Some(v) => format!("--vdev {v}"),
        None => format!("--port {}", args.port),
    };
    let port_args = match &args.vdev {
        Some(spec) => vec![format!("--vdev={spec}")],
        None => args.port.eal_args(0),
    };
    for a in port_args {
        eal_args.push(' ');
        eal_args.push_str(&shlex::try_quote(&a).unwrap_or_default());
    }
    let no_port = || {
        // A vdev string names its driver first (`net_tap0,iface=x`).
        let spec = match &args.vdev {
            Some(v) if v.starts_with("net_tap") => PortSpec::Tap(None),
            Some(v) if v.starts_with("net_af_packet") => PortSpec::AfPacket(v.clone()),
            Some(_) => PortSpec::Null,
            None => args.port.clone(),
        };
        match spec.missing_privilege() {
            Some(why) => anyhow!("no DPDK port: {label}: {why}"),
            None => anyhow!("no DPDK port: {label} created nothing"),
        }
    };
    let eal = Eal::init(&EalConfig::new(eal_args)).map_err(|e| match e {
        DpdkError::NoPorts => no_port(),
        e => anyhow!("DPDK port {label}: {e}"),
    })?;
    let id = *eal.port_ids().first().ok_or_else(no_port)?;
    // RoCE headers (Eth 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4) on top of the MTU.
    let l3 = roce_mtu as usize + 80;
    // + 530: net_af_packet wants 2048-byte frames (2016 bytes past its headroom) in an mbuf.
    let pool = Arc::new(
        Mempool::new(
            &eal,
            &MempoolConfig::for_frames(l3.max(1500) + 18 + 530, 8191),
        )
        .context("creating the mbuf pool")?,
    );
    let config = PortConfig {
        mtu: (l3 > 1500).then_some(l3),
        link_timeout: StdDuration::from_secs(args.timeout.min(10)),
        queues,
        ..PortConfig::default()
    };
    let port = DpdkPort::new(&eal, id, pool.clone(), &config)
        .with_context(|| format!("bringing up DPDK port {label}"))?;
    let mac = mac.unwrap_or_else(|| own_mac(&args.port, port.info().mac));
    tracing::info!(port = %args.port, %mac, %ip, queues, "port up");
    Ok(Device {
        port,
        pool,
        eal,
        mac,
        ip,
    })
}

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
    pub fn open(args: &PortArgs, roce_mtu: u32) -> anyhow::Result<Session> {
        if args.cores.len() > 1 {
            bail!(
                "--cores {}: this command runs its QP on one core (--cores 1; roce perf's bandwidth tests take more)",
                args.cores
            );
        }
        let faults = args.faults()?;
        let Device {
            port,
            pool,
            eal,
            mac,
            ip,
        } = open_device(args, roce_mtu, 1)?;
        let mut host = ResolvingEndpoint::new(EndpointConfig::ipv4(mac, ip));
        host.announce();
        let hub = Arc::new(MetricsHub::new());
        let metrics = args.metrics.start(&eal, &hub)?;
        let clock = MonotonicClock::new();
        Ok(Session {
            device: port.info().name.clone(),
            runtime: Runtime::new(
                super::faults::wrap(port, faults, args.seed.unwrap_or(DEFAULT_FAULT_SEED)),
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
        super::faults::summary(self.runtime.port())
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
             rp_cnp_handled={} error_completions={}",
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
            q.error_completions
        )
    }

    /// Prints the counters (and the fault injector's, when it ran) on stderr.
    pub fn report_counters(&self) {
        eprintln!("{}", self.counters_line());
        if self.faults_on {
            eprintln!("{}", self.fault_summary());
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

/// Whatever waits for the out-of-band thread's answers: a [`Session`] polls its port meanwhile,
/// [`Blocking`] just waits (lcores poll themselves).
pub trait Ask {
    /// Sends `req` to the out-of-band thread and returns its answer.
    fn ask(&mut self, oob: &Oob, req: Req) -> anyhow::Result<Vec<u8>>;
}

impl Ask for Session {
    fn ask(&mut self, oob: &Oob, req: Req) -> anyhow::Result<Vec<u8>> {
        Session::ask(self, oob, req)
    }
}

/// Waits for the out-of-band thread without polling anything.
pub struct Blocking;

impl Ask for Blocking {
    fn ask(&mut self, oob: &Oob, req: Req) -> anyhow::Result<Vec<u8>> {
        oob.request(req)
    }
}

/// A request to the out-of-band thread.
#[derive(Debug)]
pub enum Req {
    /// Write these bytes.
    Send(&'static str, Vec<u8>),
    /// Read one newline-terminated line.
    RecvLine(&'static str),
    /// Read exactly this many bytes.
    RecvExact(&'static str, usize),
    /// perftest's symmetric step (client writes first, server reads first).
    Exchange(&'static str, Vec<u8>),
    /// From now on, a read or write may wait this long.
    IoTimeout(StdDuration),
}

/// How the out-of-band connection starts.
pub enum Connect {
    /// Wait for a client on this listener.
    Server(TcpListener),
    /// Connect to the server (retrying refused connections until the timeout).
    Client(SocketAddr),
}

/// The out-of-band TCP connection, run on its own thread.
pub struct Oob {
    tx: Sender<Req>,
    rx: Receiver<Result<Vec<u8>, String>>,
    peer: &'static str,
}

/// The TCP side of the exchange, bound or resolved before anything else (a busy port fails
/// before EAL starts): no `server` address, listen on `tcp_port` at [`PortArgs::bind_addr`];
/// else connect to `server`.
pub fn connect(server: Option<&str>, tcp_port: u16, port: &PortArgs) -> anyhow::Result<Connect> {
    Ok(match server {
        None => Connect::Server(listen(port.bind_addr()?, tcp_port)?),
        Some(host) => Connect::Client(server_addr(host, tcp_port)?),
    })
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
    let s = Session::open(port, mtu.bytes())?;
    let oob = Oob::start(connect, s.timeout);
    Ok((s, oob))
}

/// Binds the server's TCP port on `addr`.
pub fn listen(addr: IpAddr, port: u16) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind((addr, port)).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => anyhow!("TCP port {port} is busy"),
        std::io::ErrorKind::AddrNotAvailable => {
            anyhow!("--bind {addr}: no interface of this host has that address")
        }
        _ => anyhow!("cannot listen on {addr} port {port}: {e}"),
    })?;
    let at = listener
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::new(addr, port));
    if let Some(warning) = every_interface_warning(at) {
        eprintln!("{warning}");
    }
    tracing::info!(%at, "listening for the TCP exchange");
    Ok(listener)
}

impl Oob {
    /// Starts the thread; it connects (or accepts) and then serves requests in order.
    pub fn start(connect: Connect, timeout: StdDuration) -> Oob {
        let peer = match connect {
            Connect::Server(_) => "client",
            Connect::Client(_) => "server",
        };
        let (tx, req_rx) = mpsc::channel::<Req>();
        let (rep_tx, rx) = mpsc::channel();
        let timeouts = Timeouts {
            connect: timeout,
            accept: timeout,
            io: timeout,
        };
        std::thread::spawn(move || {
            let stream = match establish(connect, timeouts) {
                Ok(s) => s,
                Err(e) => {
                    // Answer the first request with the error.
                    if req_rx.recv().is_ok() {
                        let _ = rep_tx.send(Err(e.to_string()));
                    }
                    return;
                }
            };
            serve(stream, &req_rx, &rep_tx);
        });
        Oob { tx, rx, peer }
    }

    /// What the other side is: `client` or `server`.
    pub fn peer(&self) -> &'static str {
        self.peer
    }

    /// Sends `req` and waits for its answer (nothing to poll meanwhile: lcores poll themselves).
    pub fn request(&self, req: Req) -> anyhow::Result<Vec<u8>> {
        self.tx
            .send(req)
            .map_err(|_| anyhow!("the TCP exchange thread has stopped"))?;
        match self.rx.recv() {
            Ok(r) => r.map_err(|e| anyhow!(e)),
            Err(_) => bail!("the TCP exchange thread has stopped"),
        }
    }
}

fn establish(connect: Connect, timeouts: Timeouts) -> Result<OobStream, String> {
    match connect {
        Connect::Server(listener) => OobStream::accept(&listener, timeouts).map_err(|e| {
            let at = listener
                .local_addr()
                .map_or_else(|_| "?".into(), |a| a.to_string());
            format!("waiting for the client on {at} (--bind to listen elsewhere): {e}")
        }),
        Connect::Client(addr) => {
            let deadline = std::time::Instant::now() + timeouts.connect;
            loop {
                match OobStream::connect(addr, timeouts) {
                    Ok(s) => return Ok(s),
                    Err(ExchangeError::Connect { source, .. })
                        if source.kind() == std::io::ErrorKind::ConnectionRefused
                            && std::time::Instant::now() < deadline =>
                    {
                        std::thread::sleep(StdDuration::from_millis(100));
                    }
                    Err(ExchangeError::Connect { source, .. })
                        if source.kind() == std::io::ErrorKind::ConnectionRefused =>
                    {
                        return Err(format!(
                            "no server listens at {addr} (refused for {} s)",
                            timeouts.connect.as_secs()
                        ))
                    }
                    Err(e) => return Err(format!("{e}")),
                }
            }
        }
    }
}

fn serve(mut stream: OobStream, reqs: &Receiver<Req>, reps: &Sender<Result<Vec<u8>, String>>) {
    loop {
        let req = match reqs.recv_timeout(StdDuration::from_secs(3600)) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
        };
        let rep = match req {
            Req::Send(step, bytes) => stream.send(step, &bytes).map(|()| Vec::new()),
            Req::RecvLine(step) => stream.recv_line(step, roce::oob::perf::MAX_LINE),
            Req::RecvExact(step, n) => stream.recv_exact(step, n),
            Req::Exchange(step, bytes) => stream.exchange(step, &bytes),
            Req::IoTimeout(t) => stream.set_io_timeout(t).map(|()| Vec::new()),
        };
        let failed = rep.is_err();
        // The error with its causes: what was wrong, not only the step.
        let rep = rep.map_err(|e| format!("peer: {:#}", anyhow::Error::new(e)));
        if reps.send(rep).is_err() || failed {
            return;
        }
    }
}

/// The IPv4 address inside a GID (`::ffff:a.b.c.d`), or the IPv6 address itself.
pub fn gid_ip(gid: std::net::Ipv6Addr) -> IpAddr {
    match gid.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(gid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_psns_repeat_and_os_seeded_ones_do_not() {
        let draw = |seed| {
            let mut p = PsnSource::new(seed);
            [p.next_psn(), p.next_psn(), p.next_psn(), p.next_psn()]
        };
        assert_eq!(draw(Some(7)), draw(Some(7)));
        assert_ne!(draw(Some(7)), draw(Some(8)));
        // Four 24-bit draws from the OS-seeded generator repeat with odds of 2^-96.
        assert_ne!(draw(None), draw(None));
        assert!(draw(None).iter().all(|p| p.value() <= PSN_MASK));
    }

    #[test]
    fn networks_compare_on_the_prefix() {
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert!(same_network(ip("198.18.0.254"), ip("198.18.0.1"), 15));
        assert!(same_network(ip("198.19.7.7"), ip("198.18.0.1"), 15));
        assert!(!same_network(ip("198.20.0.1"), ip("198.18.0.1"), 15));
        assert!(!same_network(ip("198.18.0.254"), ip("198.18.0.1"), 32));
        assert!(same_network(ip("10.0.0.1"), ip("198.18.0.1"), 0));
    }

    #[test]
    fn default_bind_is_the_host_address_on_the_port_network_else_loopback() {
        let args = |ip: &str, bind: Option<&str>| PortArgs {
            port: PortSpec::Null,
            vdev: None,
            eal: String::new(),
            gid_index: 0,
            ip: ip.into(),
            bind: bind.map(|b| b.parse().unwrap()),
            mac: None,
            peer_mac: None,
            timeout: 1,
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            corrupt: 0.0,
            seed: None,
            cores: Cores::one(),
            metrics: MetricsArgs::default(),
        };
        // The kernel reaches 127.0.0.0/8 from 127.0.0.1: that is the port's network here.
        assert_eq!(
            args("127.0.0.9/8", None).bind_addr().unwrap(),
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        );
        // A /32 holds no address of this host: loopback, not every interface.
        assert_eq!(
            args("192.0.2.1/32", None).bind_addr().unwrap(),
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        );
        assert_eq!(
            args("192.0.2.1/24", Some("0.0.0.0")).bind_addr().unwrap(),
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        );
    }
}
