//! `roce perf`: perftest's bandwidth and latency tests (`ib_write_bw`, `ib_send_lat`, ...) over a
//! DPDK port, with perftest's names, options and output lines. Server without an address, client
//! with one; QPN/PSN/rkey/address go over TCP (roce's own JSON lines, [`roce::oob::perf`], or
//! perftest's format with `--peer-format perftest`, either side, so a real perftest tool can be
//! the peer). Whatever the peer asks for is checked against the same bounds as our own flags
//! before anything is allocated, and refused with one line to both sides. Not here: the
//! transport (`roce_proto::resolving`), the port and TCP plumbing ([`crate::cli::session`]), the output
//! formatting ([`report`]).

mod lcores;
mod perftest;
pub mod report;
mod traffic;
pub mod verbs;

use std::io::Write;

use anyhow::{anyhow, bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use roce::oob::perf::{decode_line, refusal_line, Dest, Hello, Test};
use roce::oob::DecodeError;
use roce_proto::connect::RcOptions;
use roce_proto::mr::{MrInfo, PdHandle};
use roce_proto::psn::Psn;
use roce_proto::resolving::PeerQp;
use roce_proto::size::parse_bytes;
use roce_proto::verbs::{AccessFlags, CqHandle, Mtu, QpInit};

use crate::cli::output::Live;
use crate::cli::session::{self, Ask, Oob, PortArgs, Req, Session};
use report::{Bw, LAT_HEADER, RESULT_LINE};
use traffic::{client_run, next_size, post_recvs, Server};

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
    /// Our QPs' connection options at the agreed `mtu`: `-u` and perftest's retries (7 and 7).
    fn rc_options(&self, mtu: Mtu) -> RcOptions {
        RcOptions {
            mtu,
            timeout: self.qp_timeout,
            retry_cnt: 7,
            rnr_retry: 7,
            ..RcOptions::default()
        }
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
    if args.port.cores.len() > 1 {
        return lcores::run(test, &args, hello, cc.as_ref(), max_memory, out);
    }
    let flow = perftest::Flow::of(test);
    let is_client = args.server.is_some();
    let (mut s, oob) = session::start(args.server.as_deref(), args.tcp_port, &args.port, mtu)?;

    // 1. Parameters: the client's rule, within the bounds of each side.
    let hello = if perftest {
        let mtu = perftest::preamble(&mut s, &oob, hello.mtu)?;
        Hello { mtu, ..hello }
    } else {
        agree(&mut s, &oob, is_client, hello, max_memory)?
    };
    let mtu = Mtu::from_bytes(hello.mtu).ok_or_else(|| anyhow!("bad agreed MTU {}", hello.mtu))?;
    let max_size = hello.max_size();
    // Checked against --max-memory above: it fits.
    let mr_len = usize::try_from(hello.buffer_len()).context("buffer size")?;

    // 2. QPs and buffers, then keys.
    let depth = args.tx_depth.clamp(1, 1024);
    let mut psns = args.port.psns();
    let mut qps = Vec::new();
    for _ in 0..hello.qps {
        let q = Qp::create(s.host.endpoint_mut(), depth, mr_len, psns.next_psn())
            .context("creating a QP")?;
        qps.push(q);
    }
    let ip = args.port.ip()?.address();
    let mine: Vec<Dest> = qps.iter().map(|q| q.dest(ip)).collect();
    let theirs: Vec<Dest> = if perftest {
        let mut t = Vec::new();
        for d in &mine {
            t.push(perftest::keys(&mut s, &oob, d)?);
        }
        t
    } else {
        if !is_client && hello.duration > 0 {
            // The client's results come after its whole run.
            let run = std::time::Duration::from_secs(hello.duration);
            s.ask(&oob, Req::IoTimeout(s.timeout.saturating_add(run)))?;
        }
        swap(&mut s, &oob, is_client, &mine, "keys")?
    };
    let peer_mac = args.port.peer_mac()?;
    let opts = args.rc_options(mtu);
    let mut plan = Vec::new();
    for (q, d) in qps.iter_mut().zip(&theirs) {
        q.peer = *d;
        let peer = PeerQp {
            ip: session::gid_ip(d.gid),
            mac: peer_mac,
            qpn: d.qpn,
            psn: Psn::new(d.psn),
        };
        plan.push((q.qpn, peer, q.psn));
        if let Some(c) = cc.as_ref() {
            s.host
                .endpoint_mut()
                .set_congestion_control(q.qpn, c.build(), 64 * 1024)
                .context("installing --cc")?;
        }
    }
    s.connect_all(&plan, &opts)?;
    print_banner(out, test, &hello, depth, &qps, ip, args.report_gbits)?;
    if test.uses_recv() {
        for q in qps.iter_mut() {
            post_recvs(&mut s, q, max_size, depth)?;
        }
    }
    let first = *mine.first().ok_or_else(|| anyhow!("internal: no QP"))?;
    if perftest {
        // The barriers after ctx_connect and before traffic.
        for _ in 1..flow.pre {
            perftest::keys(&mut s, &oob, &first)?;
        }
    } else {
        let _: Vec<bool> = swap(&mut s, &oob, is_client, &[true], "ready")?;
    }

    // 3. One run per size.
    for &size in &hello.sizes {
        // Nothing is cleared: a peer may already have written this size's first mark (clearing
        // the region here once wiped ib_write_lat's first write and both sides waited).
        next_size(&s.host, test, &mut qps, size)?;
        if perftest {
            perftest_size(
                &mut s, &oob, test, &hello, size, depth, &mut qps, &first, flow, &args, out,
            )?;
            continue;
        }
        let _: Vec<u64> = swap(&mut s, &oob, is_client, &[size], "start")?;
        let gbits = args.report_gbits;
        if is_client {
            let end = client_run(&mut s, test, &hello, size, depth, &mut qps, out)?;
            s.ask(&oob, Req::Send("send results", json_line(&end)?))?;
            let theirs: End =
                recv_checked(&mut s, &oob, ("read results", "results"), |_: &End| Ok(()))?;
            if let Some(bw) = combined(end.bw, theirs.bw, hello.bidir) {
                writeln!(out, "{}", bw.line(gbits))?;
            }
        } else {
            let ours = if hello.bidir {
                Some(client_run(
                    &mut s, test, &hello, size, depth, &mut qps, out,
                )?)
            } else {
                None
            };
            let mut server = Server::new(test, size, hello.iters, depth);
            let msg = s.converse(&oob, Req::RecvLine("read results"), |h| {
                server.step(h, &mut qps, max_size, depth)
            })?;
            let end: End = decode_checked(&mut s, &oob, "results", &msg, |_: &End| Ok(()))?;
            let mine = End {
                bw: ours.as_ref().and_then(|o| o.bw),
                completed: server.seen,
            };
            s.ask(&oob, Req::Send("send results", json_line(&mine)?))?;
            if let Some(bw) = combined(end.bw, mine.bw, hello.bidir) {
                writeln!(out, "{}", bw.line(gbits))?;
            }
            if let Some(lat) = server.lat() {
                writeln!(out, "{}", lat.line())?;
            }
        }
    }
    writeln!(out, "{RESULT_LINE}")?;
    s.report_counters();
    Ok(())
}

/// The parameters both sides run with: the client sends its own, the server checks them (same
/// test, within its bounds) and answers with the agreed ones (the smaller MTU).
fn agree(
    s: &mut impl Ask,
    oob: &Oob,
    is_client: bool,
    hello: Hello,
    max_memory: u64,
) -> anyhow::Result<Hello> {
    let test = hello.test;
    if is_client {
        let line = json_line(&hello)?;
        s.ask(oob, Req::Send("send parameters", line))?;
        let theirs: Hello =
            recv_checked(s, oob, ("read parameters", "parameters"), |t: &Hello| {
                t.check(max_memory).map_err(|e| e.to_string())
            })?;
        return Ok(Hello {
            mtu: theirs.mtu.min(hello.mtu),
            ..hello
        });
    }
    let theirs: Hello = recv_checked(s, oob, ("read parameters", "parameters"), |t: &Hello| {
        if t.test != test {
            return Err(format!(
                "\"test\" {}: this server runs {}: start both with the same test",
                t.test.name(),
                test.name()
            ));
        }
        t.check(max_memory).map_err(|e| e.to_string())
    })?;
    let agreed = Hello {
        mtu: theirs.mtu.min(hello.mtu),
        ..theirs
    };
    s.ask(oob, Req::Send("send parameters", json_line(&agreed)?))?;
    Ok(agreed)
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

/// One size against a perftest tool: the traffic (client) or serving it (server), then what
/// the tool exchanges after it; prints perftest's result line for our side.
#[allow(clippy::too_many_arguments)]
fn perftest_size(
    s: &mut Session,
    oob: &Oob,
    test: Test,
    hello: &Hello,
    size: u64,
    depth: u32,
    qps: &mut [Qp],
    mine: &Dest,
    flow: perftest::Flow,
    args: &PerfArgs,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let gbits = args.report_gbits;
    if s_is_client(args) {
        let end = client_run(s, test, hello, size, depth, qps, out)?;
        if let Some(bw) = &end.bw {
            writeln!(out, "{}", bw.line(gbits))?;
        }
        perftest::finish(s, oob, mine, flow, end.bw.as_ref(), gbits, &mut |_| Ok(()))?;
        return Ok(());
    }
    let mut server = Server::new(test, size, hello.iters, depth);
    let max_size = size.max(8);
    if test == Test::WriteLat {
        // No exchange after ib_write_lat's traffic: answer every write, then let the last ACK go.
        let mut last = std::time::Instant::now();
        let mut seen = 0;
        while server.seen < hello.iters {
            s.poll();
            server.step(&mut s.host, qps, max_size, depth)?;
            if server.seen != seen {
                seen = server.seen;
                last = std::time::Instant::now();
            }
            if last.elapsed() > s.timeout {
                bail!(
                    "the peer stopped writing ({} of {} iterations)",
                    server.seen,
                    hello.iters
                );
            }
        }
        s.drain(std::time::Duration::from_millis(200));
    } else {
        let theirs = perftest::finish(s, oob, mine, flow, None, gbits, &mut |h| {
            server.step(h, qps, max_size, depth)
        })?;
        if let Some(r) = theirs {
            writeln!(out, "{}", perftest::bw_from_report(&r, gbits).line(gbits))?;
        }
    }
    if let Some(bw) = server.bw() {
        writeln!(out, "{}", bw.line(gbits))?;
    }
    if let Some(lat) = server.lat() {
        writeln!(out, "{}", lat.line())?;
    }
    Ok(())
}

fn s_is_client(args: &PerfArgs) -> bool {
    args.server.is_some()
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
    };
    hello
        .check(max_memory)
        .map_err(|e| anyhow!(e.flag_line()))?;
    Ok(hello)
}

fn json_line<T: Serialize>(v: &T) -> anyhow::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(v)?;
    line.push(b'\n');
    Ok(line)
}

/// Reads the peer's next line as `T` and holds it to `check`; whatever we refuse (a line that
/// is not roce's, a value out of bounds) is said to the peer in a refusal line before we give
/// up, so both sides end with the same one line.
fn recv_checked<T: DeserializeOwned>(
    s: &mut impl Ask,
    oob: &Oob,
    (step, what): (&'static str, &'static str),
    check: impl FnOnce(&T) -> Result<(), String>,
) -> anyhow::Result<T> {
    let line = s.ask(oob, Req::RecvLine(step))?;
    decode_checked(s, oob, what, &line, check)
}

/// [`recv_checked`] for a line already read.
fn decode_checked<T: DeserializeOwned>(
    s: &mut impl Ask,
    oob: &Oob,
    what: &'static str,
    line: &[u8],
    check: impl FnOnce(&T) -> Result<(), String>,
) -> anyhow::Result<T> {
    let problem = match decode_line::<T>(what, line) {
        Ok(v) => match check(&v) {
            Ok(()) => return Ok(v),
            Err(why) => format!("the {}'s {what}: {why}", oob.peer()),
        },
        // The peer gave up first and said why: nothing to tell it.
        Err(e @ DecodeError::Refused { .. }) => bail!("{e}"),
        Err(e) => format!("the {}'s {e}", oob.peer()),
    };
    // Best effort: the peer may be gone already.
    let _ = s.ask(oob, Req::Send("send refusal", refusal_line(&problem)));
    bail!("{problem}")
}

/// Client sends first, server answers: both get the other's `mine`, as many as ours.
fn swap<T: Serialize + DeserializeOwned>(
    s: &mut impl Ask,
    oob: &Oob,
    is_client: bool,
    mine: &[T],
    what: &'static str,
) -> anyhow::Result<Vec<T>> {
    let line = json_line(&mine)?;
    if is_client {
        s.ask(oob, Req::Send(what, line.clone()))?;
    }
    let theirs = recv_checked(s, oob, (what, what), |t: &Vec<T>| {
        if t.len() == mine.len() {
            Ok(())
        } else {
            Err(format!("{} entries, we have {}", t.len(), mine.len()))
        }
    })?;
    if !is_client {
        s.ask(oob, Req::Send(what, line))?;
    }
    Ok(theirs)
}

/// A GID as perftest prints it: sixteen bytes in decimal (`...:255:255:198:18:00:01`).
fn perftest_gid(gid: std::net::Ipv6Addr) -> String {
    let parts: Vec<String> = gid.octets().iter().map(|b| format!("{b:02}")).collect();
    parts.join(":")
}

/// perftest's banner: the test, its parameters, each QP's keys and ours, the result header.
fn print_banner(
    out: &mut dyn Write,
    test: Test,
    hello: &Hello,
    depth: u32,
    qps: &[Qp],
    ip: std::net::Ipv4Addr,
    gbits: bool,
) -> std::io::Result<()> {
    writeln!(out, "{RESULT_LINE}")?;
    writeln!(out, "                    {}", test.title())?;
    writeln!(
        out,
        " Number of qps   : {}\t\tTransport type : IB",
        hello.qps
    )?;
    writeln!(out, " Connection type : RC\t\tUsing SRQ      : OFF")?;
    writeln!(out, " TX depth        : {depth}")?;
    writeln!(out, " Mtu             : {}[B]", hello.mtu)?;
    writeln!(out, " Link type       : Ethernet")?;
    writeln!(out, " Data ex. method : Ethernet")?;
    writeln!(out, "{RESULT_LINE}")?;
    for q in qps {
        writeln!(
            out,
            " local address: LID 0000 QPN {:#06x} PSN {:#08x} RKey {:#08x} VAddr {:#016x}",
            q.qpn,
            q.psn.value(),
            q.dst.rkey,
            q.dst.addr
        )?;
        writeln!(out, " GID: {}", perftest_gid(ip.to_ipv6_mapped()))?;
        writeln!(
            out,
            " remote address: LID 0000 QPN {:#06x} PSN {:#08x} RKey {:#08x} VAddr {:#016x}",
            q.peer.qpn, q.peer.psn, q.peer.rkey, q.peer.addr
        )?;
        writeln!(out, " GID: {}", perftest_gid(q.peer.gid))?;
        let _ = q.pd;
    }
    writeln!(out, "{RESULT_LINE}")?;
    if test.is_bw() {
        writeln!(out, "{}", report::bw_header(gbits))?;
    } else {
        writeln!(out, "{LAT_HEADER}")?;
    }
    Ok(())
}
