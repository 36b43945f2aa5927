//! `roce pingpong`: rdma-core's `ibv_rc_pingpong` on a DPDK port: the same options, the same
//! 52-byte TCP exchange (so the real tool can be either peer), the same ping-pong of SENDs and the
//! same closing lines. Not here: UD/XRC/SRQ variants, ODP, events (`-e`).

use std::io::Write;

use anyhow::{anyhow, bail, Context};
use clap::Args;

use roce::oob::pingpong;
use roce::oob::pingpong::PingpongDest;
use roce_proto::connect::RcOptions;
use roce_proto::mr::MrInfo;
use roce_proto::psn::Psn;
use roce_proto::resolving::PeerQp;
use roce_proto::size::parse_bytes_as;
use roce_proto::verbs::{
    AccessFlags, CqHandle, Mtu, QpInit, RecvWr, SendWr, Sge, WcOpcode, WcStatus, WrOpcode,
};
use roce_proto::wire::EthernetAddress;

use super::output::Live;
use super::session::{self, Oob, PortArgs, Req, Session};

/// Options of `roce pingpong` (ibv_rc_pingpong's).
#[derive(Args, Debug)]
pub struct PingpongArgs {
    /// The server's TCP address (client mode); without it we are the server.
    pub server: Option<String>,
    /// TCP port of the exchange.
    #[arg(short = 'p', long = "tcp-port", default_value_t = 18515)]
    pub tcp_port: u16,
    /// Size of each message.
    #[arg(short = 's', long = "size", default_value = "4096", value_parser = parse_bytes_as::<u32>)]
    pub size: u32,
    /// Path MTU: 256, 512, 1024, 2048, 4096.
    #[arg(short = 'm', long = "mtu", default_value_t = 1024)]
    pub mtu: u32,
    /// Receives to post at a time.
    #[arg(short = 'r', long = "rx-depth", default_value_t = 500)]
    pub rx_depth: u32,
    /// Messages to exchange.
    #[arg(short = 'n', long = "iters", default_value_t = 1000)]
    pub iters: u32,
    /// Starting PSN (default: random, from the OS-seeded generator or --seed).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=0xff_ffff))]
    pub psn: Option<u32>,
    /// GID index (accepted for compatibility; we have one GID, our IPv4 address).
    #[arg(short = 'g', long = "gid-idx", default_value_t = 0)]
    pub gid_idx: u32,
    /// Check received buffers (rc_pingpong's `-c`).
    #[arg(short = 'c', long = "chk")]
    pub chk: bool,
    /// DPDK port.
    #[command(flatten)]
    pub port: PortArgs,
}

const PAGE: usize = 4096;
const RECV_WRID: u64 = 1;
const SEND_WRID: u64 = 2;

/// rc_pingpong's buffer: 0x7b everywhere, with `-c` the first byte of each page is 0
/// (`i / page_size % sizeof(char)`).
fn expected_byte(i: usize, chk: bool) -> u8 {
    if chk && i % PAGE == 0 {
        0
    } else {
        0x7b
    }
}

/// The QP attributes ibv_rc_pingpong sets (and rc_verbs_peer.py after it): ACK timeout 14,
/// 7 retries, 7 RNR retries, RNR timer 12; at `mtu`, with `max_rd_atomic` and `access`.
pub(crate) fn rc_pingpong_options(mtu: Mtu, max_rd_atomic: u8, access: AccessFlags) -> RcOptions {
    RcOptions {
        mtu,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 12,
        max_rd_atomic,
        access,
        ..RcOptions::default()
    }
}

/// Runs `roce pingpong`, rc_pingpong's lines written to `out` as they come.
pub fn run(args: PingpongArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let out = &mut Live(out);
    let mtu = check(&args)?;
    let ip = args.port.ip()?.address();
    let is_client = args.server.is_some();
    let (mut s, oob) = session::start(args.server.as_deref(), args.tcp_port, &args.port, mtu)?;
    let qp = Local::create(&mut s, &args)?;
    let mine = PingpongDest {
        lid: 0,
        qpn: qp.qpn,
        psn: Psn::new(qp.psn),
        gid: ip.to_ipv6_mapped(),
    };
    let peer = Peer {
        mac: args.port.peer_mac()?,
        opts: rc_pingpong_options(mtu, 1, AccessFlags::empty()),
    };
    let theirs = exchange(&mut s, &oob, &qp, &mine, &peer, is_client)?;
    write_addresses(out, &mine, &theirs)?;
    let secs = ping_pong(&mut s, &qp, is_client)?;
    let bytes = u64::from(args.size) * u64::from(args.iters) * 2;
    writeln!(
        out,
        "{bytes} bytes in {secs:.2} seconds = {:.2} Mbit/sec",
        bytes as f64 * 8.0 / secs / 1e6
    )?;
    writeln!(
        out,
        "{} iters in {secs:.2} seconds = {:.2} usec/iter",
        args.iters,
        secs * 1e6 / f64::from(args.iters)
    )?;
    // Let the last ACKs leave before the port goes away.
    s.drain(std::time::Duration::from_millis(100));
    s.report_counters();
    Ok(())
}

/// The path MTU of `-m`, once every option is within its bounds.
fn check(args: &PingpongArgs) -> anyhow::Result<Mtu> {
    let mtu = session::parse_mtu(args.mtu)?;
    if args.size == 0 || args.size > 1 << 30 {
        bail!("-s {}: the size must be 1..=2^30 bytes", args.size);
    }
    if args.iters == 0 {
        bail!("-n 0: at least one iteration");
    }
    if args.rx_depth == 0 || args.rx_depth > 4096 {
        bail!("-r {}: the receive depth must be 1..=4096", args.rx_depth);
    }
    Ok(mtu)
}

/// Our QP, its CQ and its one buffer, as rc_pingpong sets them up.
struct Local {
    qpn: u32,
    cq: CqHandle,
    mr: MrInfo,
    /// Our first PSN.
    psn: u32,
    /// Bytes of every message.
    size: u32,
    /// Receives kept posted.
    depth: u32,
    /// Messages each way.
    iters: u32,
    /// Check each received buffer (`-c`, on the server).
    chk: bool,
}

/// How we reach the peer: its MAC if given, and the QP attributes rc_pingpong uses.
struct Peer {
    mac: Option<EthernetAddress>,
    opts: RcOptions,
}

impl Local {
    /// The QP (depth 1 send, `-r` receives), a buffer of `-s` bytes filled as rc_pingpong's
    /// and the first PSN (`--psn`, else drawn).
    fn create(s: &mut Session, args: &PingpongArgs) -> anyhow::Result<Local> {
        let depth = args.rx_depth;
        let ep = s.host.endpoint_mut();
        let pd = ep.alloc_pd();
        let cq = ep.create_cq(depth as usize + 8);
        let qpn = ep
            .create_qp(QpInit::shared_cq(pd, cq, 1, depth))
            .context("creating the QP")?;
        let mr = ep.reg_mr(pd, args.size as usize, AccessFlags::LOCAL_WRITE);
        if let Some(m) = ep.mr_mut(mr.lkey) {
            for (i, b) in m.bytes_mut().iter_mut().enumerate() {
                *b = expected_byte(i, args.chk);
            }
        }
        let psn = match args.psn {
            Some(psn) => psn,
            None => args.port.psns().next_psn().value(),
        };
        Ok(Local {
            qpn,
            cq,
            mr,
            psn,
            size: args.size,
            depth,
            iters: args.iters,
            chk: args.chk,
        })
    }

    /// The whole buffer, as every send and receive uses it.
    fn sge(&self) -> Sge {
        Sge {
            addr: self.mr.addr,
            length: self.size,
            lkey: self.mr.lkey,
        }
    }

    fn post_recv(&self, s: &mut Session) -> anyhow::Result<()> {
        s.host
            .endpoint_mut()
            .post_recv(self.qpn, RecvWr::new(RECV_WRID, self.sge()))
            .context("posting a receive")
    }

    fn send(&self, s: &mut Session) -> anyhow::Result<()> {
        let wr = SendWr::new(SEND_WRID, WrOpcode::Send, self.sge());
        s.host
            .endpoint_mut()
            .post_send(self.qpn, wr)
            .context("posting a send")
    }

    /// Connects to `theirs` (ARP resolving the peer) and posts the receives.
    fn connect(&self, s: &mut Session, theirs: &PingpongDest, peer: &Peer) -> anyhow::Result<()> {
        let p = PeerQp {
            ip: session::gid_ip(theirs.gid),
            mac: peer.mac,
            qpn: theirs.qpn,
            psn: theirs.psn,
        };
        s.connect_all(&[(self.qpn, p, Psn::new(self.psn))], &peer.opts)?;
        for _ in 0..self.depth {
            self.post_recv(s)?;
        }
        Ok(())
    }
}

/// rc_pingpong's exchange: the client sends its destination, reads the server's and says
/// "done"; the server reads, connects, answers and waits for "done". Returns the peer's.
fn exchange(
    s: &mut Session,
    oob: &Oob,
    qp: &Local,
    mine: &PingpongDest,
    peer: &Peer,
    is_client: bool,
) -> anyhow::Result<PingpongDest> {
    let decode = |msg: &[u8]| {
        PingpongDest::decode(msg).map_err(|e| anyhow!("the peer's rc_pingpong message: {e}"))
    };
    let send_mine = Req::Send("send rc_pingpong dest", mine.encode().to_vec());
    let read_theirs = Req::RecvExact("read rc_pingpong dest", pingpong::MESSAGE_LEN);
    if is_client {
        s.ask(oob, send_mine)?;
        let theirs = decode(&s.ask(oob, read_theirs)?)?;
        s.ask(oob, Req::Send("send done", pingpong::DONE.to_vec()))?;
        qp.connect(s, &theirs, peer)?;
        return Ok(theirs);
    }
    let theirs = decode(&s.ask(oob, read_theirs)?)?;
    qp.connect(s, &theirs, peer)?;
    s.ask(oob, send_mine)?;
    let done = s.ask(oob, Req::RecvExact("read done", pingpong::DONE.len()))?;
    pingpong::decode_done(&done).map_err(|e| anyhow!("the peer's done message: {e}"))?;
    Ok(theirs)
}

/// rc_pingpong's two address lines.
fn write_addresses(
    out: &mut dyn Write,
    mine: &PingpongDest,
    theirs: &PingpongDest,
) -> std::io::Result<()> {
    let gid = |g: std::net::Ipv6Addr| match g.to_ipv4_mapped() {
        Some(v4) => format!("::ffff:{v4}"),
        None => g.to_string(),
    };
    writeln!(
        out,
        "  local address:  LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
        0,
        mine.qpn,
        mine.psn.value(),
        gid(mine.gid)
    )?;
    writeln!(
        out,
        "  remote address: LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
        theirs.lid,
        theirs.qpn,
        theirs.psn.value(),
        gid(theirs.gid)
    )
}

/// rc_pingpong's loop: the client sends first; each side sends again once its last SEND and a
/// receive have both completed. Returns the seconds it took.
fn ping_pong(s: &mut Session, qp: &Local, is_client: bool) -> anyhow::Result<f64> {
    let iters = qp.iters;
    let start = std::time::Instant::now();
    let (mut scnt, mut rcnt) = (0u32, 0u32);
    let (mut send_pending, mut recv_pending) = (false, true);
    if is_client {
        qp.send(s)?;
        send_pending = true;
    }
    let mut last_progress = std::time::Instant::now();
    while scnt < iters || rcnt < iters {
        s.poll();
        while let Some(wc) = s.host.endpoint_mut().poll_cq_one(qp.cq) {
            if wc.status != WcStatus::Success {
                bail!(
                    "Failed status {:?} for wr_id {} after {scnt} sends and {rcnt} receives of {iters} \
                     (the peer stopped answering?)",
                    wc.status,
                    wc.wr_id,
                );
            }
            last_progress = std::time::Instant::now();
            match wc.opcode {
                WcOpcode::Recv => {
                    rcnt += 1;
                    recv_pending = false;
                    if qp.chk && !is_client {
                        check_buffer(s, qp.mr.lkey, qp.size as usize)?;
                    }
                    qp.post_recv(s)?;
                }
                _ => {
                    scnt += 1;
                    send_pending = false;
                }
            }
            if !send_pending && !recv_pending && scnt < iters {
                qp.send(s)?;
                send_pending = true;
                recv_pending = true;
            }
        }
        if last_progress.elapsed() > s.timeout {
            bail!("the peer stopped answering ({scnt} sends, {rcnt} receives of {iters})");
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

fn check_buffer(s: &Session, lkey: u32, size: usize) -> anyhow::Result<()> {
    let bytes = s
        .host
        .endpoint()
        .mr(lkey)
        .map(|m| m.bytes())
        .ok_or_else(|| anyhow!("the buffer is gone"))?;
    for (i, &b) in bytes.iter().take(size).enumerate() {
        if b != expected_byte(i, true) {
            bail!("invalid data in page {} (byte {i} is {b:#04x})", i / PAGE);
        }
    }
    Ok(())
}
