//! `roce perf`: perftest's bandwidth and latency tests (`ib_write_bw`, `ib_send_lat`, ...) over a
//! DPDK port, with perftest's names, options and output lines. Server without an address, client
//! with one; QPN/PSN/rkey/address go over TCP (roce's own JSON lines, [`roce::oob::perf`], or
//! perftest's format with `--peer-format perftest`, either side, so a real perftest tool can be
//! the peer). Whatever the peer asks for is checked against the same bounds as our own flags
//! before anything is allocated, and refused with one line to both sides.
//!
//! Here: the flags, checked into the parameters a client proposes ([`plan`]); a run on one lcore
//! ([`one_lcore`]) or several ([`lcores`]). Not here: the transport (`roce_proto::resolving`),
//! the port and TCP plumbing ([`crate::cli::session`]), the exchange of parameters, keys and
//! results ([`exchange`], [`perftest`]), the output formatting ([`report`]).

mod exchange;
mod lcores;
mod one_lcore;
mod perftest;
pub mod report;
mod traffic;
pub mod verbs;

use std::io::Write;

use anyhow::{anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

use roce::oob::perf::{Dest, Hello, Test};
use roce_proto::connect::RcOptions;
use roce_proto::mr::{MrInfo, PdHandle};
use roce_proto::psn::Psn;
use roce_proto::size::parse_bytes;
use roce_proto::verbs::{AccessFlags, CqHandle, Mtu, QpInit, Recovery};

use crate::cli::output::Live;
use crate::cli::recovery::RecoveryMode;
use crate::cli::session::{self, PortArgs};
use report::Bw;

/// `roce perf` tests.
#[derive(Subcommand, Debug)]
pub enum PerfCommand {
    /// RDMA WRITE bandwidth (ib_write_bw).
    WriteBw(PerfArgs),
    /// RDMA READ bandwidth (ib_read_bw).
    ReadBw(PerfArgs),
    /// SEND bandwidth (ib_send_bw).
    SendBw(PerfArgs),
    /// RDMA WRITE latency (ib_write_lat).
    WriteLat(PerfArgs),
    /// RDMA READ latency (ib_read_lat).
    ReadLat(PerfArgs),
    /// SEND latency (ib_send_lat).
    SendLat(PerfArgs),
    /// Fetch-and-add latency (ib_atomic_lat).
    AtomicLat(PerfArgs),
    /// SEND/WRITE with immediate and atomics, as rc_verbs_peer.py (either side).
    VerbsPeer(verbs::VerbsPeerArgs),
}

/// How QP information is exchanged over TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PeerFormat {
    /// roce's JSON lines (both sides roce).
    Roce,
    /// perftest 4.5's messages (the peer is ib_write_bw, ib_send_lat, ...; one QP, one size).
    Perftest,
}

/// Options shared by every test (perftest's names).
#[derive(Args, Debug)]
pub struct PerfArgs {
    /// The server's TCP address (client mode); without it we are the server.
    pub server: Option<String>,
    /// Message size in bytes (suffixes as everywhere: 64K, 1MiB, 5KB).
    #[arg(short = 's', long = "size", value_parser = parse_bytes)]
    pub size: Option<u64>,
    /// All sizes from 2 to 2^23 bytes.
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Iterations (default 5000 for bandwidth, 1000 for latency).
    #[arg(short = 'n', long = "iters")]
    pub iters: Option<u64>,
    /// Run for this many seconds instead of a number of iterations (bandwidth tests).
    #[arg(short = 'D', long = "duration")]
    pub duration: Option<u64>,
    /// Path MTU: 256, 512, 1024, 2048, 4096.
    #[arg(short = 'm', long = "mtu", default_value_t = 1024)]
    pub mtu: u32,
    /// Queue pairs (bandwidth tests).
    #[arg(short = 'q', long = "qp", default_value_t = 1)]
    pub qps: u32,
    /// Send queue depth (outstanding requests per QP).
    #[arg(short = 't', long = "tx-depth", default_value_t = 128)]
    pub tx_depth: u32,
    /// TCP port of the out-of-band exchange.
    #[arg(short = 'p', long = "tcp-port", default_value_t = 18515)]
    pub tcp_port: u16,
    /// Report bandwidth in Gbit/s.
    #[arg(long = "report_gbits")]
    pub report_gbits: bool,
    /// Local ACK timeout of our QPs, 4.096 us * 2^N (perftest's `-u`; 0..=31).
    #[arg(short = 'u', long = "qp-timeout", default_value_t = 14)]
    pub qp_timeout: u8,
    /// Bidirectional: both sides send (bandwidth tests; roce peers only).
    #[arg(short = 'b', long = "bidirectional")]
    pub bidir: bool,
    /// Congestion control of our QPs (see `roce cc list`); none by default.
    #[arg(long)]
    pub cc: Option<String>,
    /// Loss recovery of our QPs: `selective` (roce's selective repeat) runs only when the peer
    /// is roce and asks for it too; otherwise both sides go back N.
    #[arg(long, value_enum, default_value = "go-back-n")]
    pub recovery: RecoveryMode,
    /// Format of the out-of-band exchange.
    #[arg(long, value_enum, default_value = "roce")]
    pub peer_format: PeerFormat,
    /// MiB of buffers a run may register (QPs x 2 x the largest size): ours, and what a client
    /// may ask of us as a server.
    #[arg(long, default_value_t = roce::oob::perf::DEFAULT_MAX_MEMORY >> 20)]
    pub max_memory: u64,
    /// DPDK port.
    #[command(flatten)]
    pub port: PortArgs,
}

impl PerfArgs {
    /// Our QPs' connection options for the agreed parameters: their MTU and recovery, `-u` and
    /// perftest's retries (7 and 7).
    fn rc_options(&self, agreed: &Hello) -> anyhow::Result<RcOptions> {
        let mtu =
            Mtu::from_bytes(agreed.mtu).ok_or_else(|| anyhow!("bad agreed MTU {}", agreed.mtu))?;
        Ok(RcOptions {
            mtu,
            timeout: self.qp_timeout,
            retry_cnt: 7,
            rnr_retry: 7,
            recovery: if agreed.selective_repeat {
                Recovery::SelectiveRepeat
            } else {
                Recovery::GoBackN
            },
            ..RcOptions::default()
        })
    }
}

/// The end of one size: what the client measured, or what the server saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct End {
    bw: Option<Bw>,
    completed: u64,
}

struct Qp {
    qpn: u32,
    /// Our first PSN.
    psn: Psn,
    cq: CqHandle,
    pd: PdHandle,
    src: MrInfo,
    dst: MrInfo,
    peer: Dest,
    posted: u64,
    done: u64,
    recvs: u64,
}

impl Qp {
    /// What the peer needs to reach this QP's destination buffer.
    fn dest(&self, ip: std::net::Ipv4Addr) -> Dest {
        Dest {
            qpn: self.qpn,
            psn: self.psn.value(),
            rkey: self.dst.rkey,
            addr: self.dst.addr,
            gid: ip.to_ipv6_mapped(),
        }
    }

    /// A QP of `depth` work requests each way with its CQ, PD and two buffers of `mr_len` bytes
    /// (source and destination, every access allowed), on `ep`; the peer unknown yet.
    fn create(
        ep: &mut roce_proto::endpoint::Endpoint,
        depth: u32,
        mr_len: usize,
        psn: Psn,
    ) -> Result<Qp, roce_proto::qp::QpError> {
        let pd = ep.alloc_pd();
        let cq = ep.create_cq(4 * depth as usize + 64);
        let qpn = ep.create_qp(QpInit::shared_cq(pd, cq, depth, depth))?;
        let access = AccessFlags::all();
        let src = ep.reg_mr(pd, mr_len, access);
        let dst = ep.reg_mr(pd, mr_len, access);
        Ok(Qp {
            qpn,
            psn,
            cq,
            pd,
            src,
            dst,
            peer: Dest {
                qpn: 0,
                psn: 0,
                rkey: 0,
                addr: 0,
                gid: std::net::Ipv6Addr::UNSPECIFIED,
            },
            posted: 0,
            done: 0,
            recvs: 0,
        })
    }
}

/// Runs a `roce perf` test, perftest's lines written to `out` as they come.
pub fn run(cmd: PerfCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    let out = &mut Live(out);
    let (test, args) = match cmd {
        PerfCommand::WriteBw(a) => (Test::WriteBw, a),
        PerfCommand::ReadBw(a) => (Test::ReadBw, a),
        PerfCommand::SendBw(a) => (Test::SendBw, a),
        PerfCommand::WriteLat(a) => (Test::WriteLat, a),
        PerfCommand::ReadLat(a) => (Test::ReadLat, a),
        PerfCommand::SendLat(a) => (Test::SendLat, a),
        PerfCommand::AtomicLat(a) => (Test::AtomicLat, a),
        PerfCommand::VerbsPeer(a) => return verbs::run(a, out),
    };
    let mtu = session::parse_mtu(args.mtu)?;
    let max_memory = args.max_memory.saturating_mul(1 << 20);
    let hello = plan(test, &args, max_memory)?;
    let cc = match args.cc.as_deref() {
        Some(name) => Some(
            roce_proto::cc::CcConfig::new(name, roce_proto::cc::Rate::from_gbps(10))
                .map_err(|e| anyhow!("--cc {name:?}: {e}"))?,
        ),
        None => None,
    };
    let perftest = args.peer_format == PeerFormat::Perftest;
    if perftest && (hello.sizes.len() != 1 || hello.qps != 1 || hello.duration > 0 || hello.bidir) {
        bail!("--peer-format perftest: one size, one QP, no -D or -b");
    }
    if perftest && hello.selective_repeat {
        bail!("--recovery selective needs a roce peer: perftest's goes back N");
    }
    if args.port.cores.len() > 1 {
        return lcores::run(test, &args, hello, cc.as_ref(), max_memory, out);
    }
    let mut run = one_lcore::Run::start(test, &args, hello, mtu, max_memory)?;
    run.connect(&args, cc.as_ref())?;
    run.banner(out, args.port.ip()?.address())?;
    run.ready()?;
    run.sizes(out)
}

/// The sum of both directions (`-b`), or the one measured.
fn combined(a: Option<Bw>, b: Option<Bw>, bidir: bool) -> Option<Bw> {
    match (a, b) {
        (Some(a), Some(b)) if bidir => Some(Bw {
            peak: a.peak + b.peak,
            avg: a.avg + b.avg,
            msg_rate: a.msg_rate + b.msg_rate,
            ..a
        }),
        (a, b) => a.or(b),
    }
}

/// The client's parameters from our flags, within the same bounds a server holds a client's to
/// ([`Hello::check`]), said in the flags' terms.
fn plan(test: Test, args: &PerfArgs, max_memory: u64) -> anyhow::Result<Hello> {
    let sizes: Vec<u64> = if test == Test::AtomicLat {
        vec![8]
    } else if args.all {
        (1..=23).map(|i| 1u64 << i).collect()
    } else {
        vec![args.size.unwrap_or(if test.is_bw() { 65536 } else { 2 })]
    };
    if args.duration == Some(0) {
        bail!("-D 0: the duration must be at least 1 s");
    }
    if args.qp_timeout > 31 {
        bail!(
            "-u {}: the QP timeout exponent must be 0..=31",
            args.qp_timeout
        );
    }
    if args.tx_depth == 0 || args.tx_depth > 1024 {
        bail!("-t {}: the TX depth must be 1..=1024", args.tx_depth);
    }
    let hello = Hello {
        test,
        sizes,
        iters: args.iters.unwrap_or(if test.is_bw() { 5000 } else { 1000 }),
        duration: args.duration.unwrap_or(0),
        qps: args.qps,
        mtu: args.mtu,
        bidir: args.bidir,
        selective_repeat: args.recovery == RecoveryMode::Selective,
    };
    hello
        .check(max_memory)
        .map_err(|e| anyhow!(e.flag_line()))?;
    Ok(hello)
}
