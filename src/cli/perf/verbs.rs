//! `roce perf verbs-peer`: the counterpart of rc_verbs_peer.py (the pyverbs peer in
//! tools/interop/rxe) on a DPDK port: the same JSON-line exchange on TCP 18516, the same memory
//! layout (a 128 KiB MR: WRITE target at 0, a 64-bit atomic target at 16 KiB starting at 100,
//! 8 KiB receive buffers from 64 KiB), the same operations (SEND/WRITE with immediate, FETCH_ADD,
//! CMP_SWAP) and the same output lines, so either side can be the real script. Not here: other
//! verbs tests (`roce perf`), the TCP framing ([`roce::oob::verbs_peer`]).

use std::io::Write;

use anyhow::{anyhow, bail, Context};
use clap::Args;

use roce::oob::verbs_peer;
use roce::oob::verbs_peer::VerbsPeerInfo;
use roce::oob::VERBS_PEER_PORT;
use roce_proto::connect::RcOptions;
use roce_proto::mr::MrInfo;
use roce_proto::resolving::{PeerQp, ResolvingEndpoint};
use roce_proto::verbs::{
    AccessFlags, CqHandle, QpInit, RecvWr, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion,
    WrOpcode,
};
use roce_proto::wire::EthernetAddress;

use crate::cli::output::Live;
use crate::cli::session::{self, Oob, PortArgs, Req, Session};

const MR_LEN: usize = 128 * 1024;
const ATOMIC_OFF: usize = 16 * 1024;
const RECV_OFF: usize = 64 * 1024;
const RECV_LEN: usize = 8192;
const DEFAULT_OPS: &str =
    "send_imm:64,write_imm:64,write_imm:8192,send_imm:8192,fetch_add:5,cmp_swap:7";

/// Options of `roce perf verbs-peer` (rc_verbs_peer.py's).
#[derive(Args, Debug)]
pub struct VerbsPeerArgs {
    /// The server's TCP address (client mode); without it we are the server.
    pub server: Option<String>,
    /// TCP port of the exchange.
    #[arg(short = 'p', long = "tcp-port", default_value_t = VERBS_PEER_PORT)]
    pub tcp_port: u16,
    /// Path MTU: 256, 512, 1024, 2048, 4096.
    #[arg(short = 'm', long = "mtu", default_value_t = 1024)]
    pub mtu: u32,
    /// Client: the operations, `name:size` (send_imm, send, write_imm, write, read, fetch_add:ADD,
    /// cmp_swap:SWAP; the compare value is 105, as the script's).
    #[arg(long, default_value = DEFAULT_OPS)]
    pub ops: String,
    /// Server: receives to post (0..=8; fewer give the client RNR NAKs).
    #[arg(long, default_value_t = 8)]
    pub nrecv: u32,
    /// DPDK port.
    #[command(flatten)]
    pub port: PortArgs,
}

/// One operation of the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    SendImm(u32),
    Send(u32),
    WriteImm(u32),
    Write(u32),
    Read(u32),
    FetchAdd(u64),
    CmpSwap(u64),
}

fn parse_ops(text: &str) -> anyhow::Result<Vec<(String, Op)>> {
    text.split(',')
        .map(|op| {
            let (name, size) = op.split_once(':').unwrap_or((op, "64"));
            let n: u64 = size
                .parse()
                .map_err(|_| anyhow!("--ops {op:?}: the size is not a number"))?;
            let len = u32::try_from(n)
                .ok()
                .filter(|&l| l as usize <= ATOMIC_OFF)
                .ok_or_else(|| anyhow!("--ops {op:?}: at most {ATOMIC_OFF} bytes"));
            let o = match name {
                "send_imm" => Op::SendImm(len?),
                "send" => Op::Send(len?),
                "write_imm" => Op::WriteImm(len?),
                "write" => Op::Write(len?),
                "read" => Op::Read(len?),
                "fetch_add" => Op::FetchAdd(n),
                "cmp_swap" => Op::CmpSwap(n),
                _ => bail!("--ops {op:?}: unknown operation {name:?}"),
            };
            Ok((op.to_owned(), o))
        })
        .collect()
}

/// The immediate the script puts in work request `wr_id`: its integer lands in a `__be32` field
/// as a little-endian host writes it, so the wire carries the bytes swapped.
fn script_imm(base: u32, wr_id: u64) -> u32 {
    base.wrapping_add(wr_id as u32).swap_bytes()
}

/// The script's completion line.
fn wc_line(wc: &WorkCompletion) -> String {
    let op = match wc.opcode {
        WcOpcode::Send => "SEND",
        WcOpcode::RdmaWrite => "RDMA_WRITE",
        WcOpcode::RdmaRead => "RDMA_READ",
        WcOpcode::CompSwap => "COMP_SWAP",
        WcOpcode::FetchAdd => "FETCH_ADD",
        WcOpcode::LocalInv => "LOCAL_INV",
        WcOpcode::Recv => "RECV",
        WcOpcode::RecvRdmaWithImm => "RECV_RDMA_WITH_IMM",
    };
    let imm = wc.imm_data.map_or_else(String::new, |w| {
        format!(
            " imm_data(host u32)=0x{:08x} wire=0x{w:08x}",
            w.swap_bytes()
        )
    });
    format!(
        "wc wr_id={} opcode={op} byte_len={}{imm}",
        wc.wr_id, wc.byte_len
    )
}

struct Peer {
    qpn: u32,
    cq: CqHandle,
    mr: MrInfo,
}

impl Peer {
    fn u64_at(&self, h: &ResolvingEndpoint, off: usize) -> Option<u64> {
        let bytes = h.endpoint().mr(self.mr.lkey)?.bytes().get(off..off + 8)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    fn hex_at(&self, h: &ResolvingEndpoint, off: usize) -> String {
        h.endpoint()
            .mr(self.mr.lkey)
            .and_then(|m| m.bytes().get(off..off + 8))
            .map_or_else(String::new, |b| {
                b.iter().map(|x| format!("{x:02x}")).collect()
            })
    }

    fn poll(&self, h: &mut ResolvingEndpoint) -> anyhow::Result<Vec<WorkCompletion>> {
        let mut out = Vec::new();
        while let Some(wc) = h.endpoint_mut().poll_cq_one(self.cq) {
            if wc.status != WcStatus::Success {
                bail!("wc error status={:?} opcode={:?}", wc.status, wc.opcode);
            }
            out.push(wc);
        }
        Ok(out)
    }
}

/// Runs `roce perf verbs-peer`, the script's lines written to `out` as they come.
pub fn run(args: VerbsPeerArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let out = &mut Live(out);
    let mtu = session::parse_mtu(args.mtu)?;
    if args.nrecv > 8 {
        bail!("--nrecv {}: 0..=8 receives", args.nrecv);
    }
    let is_client = args.server.is_some();
    let ops = if is_client {
        parse_ops(&args.ops)?
    } else {
        Vec::new()
    };
    let ip = args.port.ip()?.address();
    let (mut s, oob) = session::start(args.server.as_deref(), args.tcp_port, &args.port, mtu)?;
    let peer = Peer::create(&mut s, is_client)?;
    let setup = Setup {
        mine: VerbsPeerInfo {
            qpn: peer.qpn,
            psn: args.port.psns().next_psn(),
            gid: ip.to_ipv6_mapped(),
            addr: peer.mr.addr,
            rkey: peer.mr.rkey,
            atomic_addr: peer.mr.addr + ATOMIC_OFF as u64,
        },
        opts: crate::cli::pingpong::rc_pingpong_options(mtu, 4, AccessFlags::all()),
        peer_mac: args.port.peer_mac()?,
    };
    if is_client {
        client(&mut s, &oob, &peer, &setup, &ops, out)?;
    } else {
        writeln!(out, "server listening on {}", args.tcp_port)?;
        server(&mut s, &oob, &peer, &setup, args.nrecv, out)?;
    }
    s.report_counters();
    Ok(())
}

impl Peer {
    /// The script's QP (16 deep each way, its own CQ) and its one MR with every access: the
    /// client's filled with the script's pattern, the server's atomic target at 100.
    fn create(s: &mut Session, is_client: bool) -> anyhow::Result<Peer> {
        let ep = s.host.endpoint_mut();
        let pd = ep.alloc_pd();
        let cq = ep.create_cq(64);
        let qpn = ep
            .create_qp(QpInit::shared_cq(pd, cq, 16, 16))
            .context("creating the QP")?;
        let mr = ep.reg_mr(pd, MR_LEN, AccessFlags::all());
        if let Some(m) = ep.mr_mut(mr.lkey) {
            let bytes = m.bytes_mut();
            if is_client {
                // The script's pattern: page i holds 0x40 + i % 26.
                for (i, b) in bytes.iter_mut().enumerate() {
                    *b = 0x40 + (i / 4096 % 26) as u8;
                }
            } else if let Some(t) = bytes.get_mut(ATOMIC_OFF..ATOMIC_OFF + 8) {
                t.copy_from_slice(&100u64.to_le_bytes());
            }
        }
        Ok(Peer { qpn, cq, mr })
    }
}

/// What connecting our QP needs: the line we send, the QP attributes, the peer's MAC if given.
struct Setup {
    mine: VerbsPeerInfo,
    opts: RcOptions,
    peer_mac: Option<EthernetAddress>,
}

impl Setup {
    /// Connects `peer`'s QP to the one `theirs` describes (ARP resolving it).
    fn connect(&self, s: &mut Session, peer: &Peer, theirs: &VerbsPeerInfo) -> anyhow::Result<()> {
        let p = PeerQp {
            ip: session::gid_ip(theirs.gid),
            mac: self.peer_mac,
            qpn: theirs.qpn,
            psn: theirs.psn,
        };
        s.connect_all(&[(peer.qpn, p, self.mine.psn)], &self.opts)
    }
}

/// The peer's line.
fn decode(line: &[u8]) -> anyhow::Result<VerbsPeerInfo> {
    VerbsPeerInfo::decode(line).map_err(|e| anyhow!("the peer's rc_verbs_peer line: {e}"))
}

/// The script's client: our line, theirs, connect, the operations, "done".
fn client(
    s: &mut Session,
    oob: &Oob,
    peer: &Peer,
    setup: &Setup,
    ops: &[(String, Op)],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    s.ask(oob, Req::Send("send verbs peer line", setup.mine.encode()))?;
    let theirs = decode(&s.ask(oob, Req::RecvLine("read verbs peer line"))?)?;
    setup.connect(s, peer, &theirs)?;
    print_infos(out, &setup.mine, &theirs)?;
    run_ops(s, peer, &theirs, ops, out)?;
    s.ask(oob, Req::Send("send done", verbs_peer::DONE.to_vec()))?;
    s.drain(std::time::Duration::from_millis(300));
    Ok(())
}

/// The script's server: the client's line, connect, `nrecv` receives, our line, then every
/// completion until the client's "done", and what its operations left in our memory.
fn server(
    s: &mut Session,
    oob: &Oob,
    peer: &Peer,
    setup: &Setup,
    nrecv: u32,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let theirs = decode(&s.ask(oob, Req::RecvLine("read verbs peer line"))?)?;
    setup.connect(s, peer, &theirs)?;
    let mr = peer.mr;
    for i in 0..nrecv {
        let sge = Sge {
            addr: mr.addr + (RECV_OFF + i as usize * RECV_LEN) as u64,
            length: RECV_LEN as u32,
            lkey: mr.lkey,
        };
        s.host
            .endpoint_mut()
            .post_recv(peer.qpn, RecvWr::new(100 + u64::from(i), sge))
            .context("posting a receive")?;
    }
    s.ask(oob, Req::Send("send verbs peer line", setup.mine.encode()))?;
    print_infos(out, &setup.mine, &theirs)?;
    // Serve until the client's "done" (its operations can take long under emulation).
    s.ask(oob, Req::IoTimeout(s.timeout * 4))?;
    let mut failed = None;
    let done = s.converse(oob, Req::RecvLine("read done"), |h| {
        match peer.poll(h) {
            Ok(wcs) => {
                for wc in wcs {
                    writeln!(out, "{} status 0", wc_line(&wc))?;
                }
            }
            Err(e) => failed = failed.take().or(Some(e)),
        }
        Ok(())
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if done.as_slice() != verbs_peer::DONE {
        bail!(
            "the client ended with {:?}",
            roce::oob::printable(&String::from_utf8_lossy(&done))
        );
    }
    s.drain(std::time::Duration::from_millis(100));
    for wc in peer.poll(&mut s.host)? {
        writeln!(out, "{} status 0", wc_line(&wc))?;
    }
    let val = peer
        .u64_at(&s.host, ATOMIC_OFF)
        .ok_or_else(|| anyhow!("internal: no atomic target"))?;
    writeln!(out, "atomic target now {val}")?;
    writeln!(
        out,
        "write target[0:8]={} [8184:8192]={}",
        peer.hex_at(&s.host, 0),
        peer.hex_at(&s.host, 8184)
    )?;
    Ok(())
}

fn print_infos(
    out: &mut dyn Write,
    mine: &VerbsPeerInfo,
    theirs: &VerbsPeerInfo,
) -> std::io::Result<()> {
    let line = |i: &VerbsPeerInfo| String::from_utf8_lossy(&i.encode()).trim_end().to_owned();
    writeln!(out, "local  {}", line(mine))?;
    writeln!(out, "remote {}", line(theirs))?;
    Ok(())
}

/// The client's operations, one at a time, each waited for (as the script does).
fn run_ops(
    s: &mut Session,
    peer: &Peer,
    theirs: &VerbsPeerInfo,
    ops: &[(String, Op)],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mr = peer.mr;
    let local = |off: usize, len: u32| Sge {
        addr: mr.addr + off as u64,
        length: len,
        lkey: mr.lkey,
    };
    let (addr, rkey) = (theirs.addr, theirs.rkey);
    for (i, (text, op)) in ops.iter().enumerate() {
        let wr_id = i as u64 + 1;
        let (opcode, sge) = match *op {
            Op::SendImm(n) => (
                WrOpcode::SendWithImm {
                    imm: script_imm(0x1122_3344, wr_id),
                },
                local(0, n),
            ),
            Op::Send(n) => (WrOpcode::Send, local(0, n)),
            Op::WriteImm(n) => (
                WrOpcode::RdmaWriteWithImm {
                    remote_addr: addr,
                    rkey,
                    imm: script_imm(0x5566_7700, wr_id),
                },
                local(0, n),
            ),
            Op::Write(n) => (
                WrOpcode::RdmaWrite {
                    remote_addr: addr,
                    rkey,
                },
                local(0, n),
            ),
            Op::Read(n) => (
                WrOpcode::RdmaRead {
                    remote_addr: addr,
                    rkey,
                },
                local(32768, n),
            ),
            Op::FetchAdd(add) => (
                WrOpcode::AtomicFetchAndAdd {
                    remote_addr: theirs.atomic_addr,
                    rkey,
                    add,
                },
                local(ATOMIC_OFF, 8),
            ),
            Op::CmpSwap(swap) => (
                WrOpcode::AtomicCmpAndSwp {
                    remote_addr: theirs.atomic_addr,
                    rkey,
                    compare: 105,
                    swap,
                },
                local(ATOMIC_OFF, 8),
            ),
        };
        s.host
            .endpoint_mut()
            .post_send(peer.qpn, SendWr::new(wr_id, opcode, sge))
            .with_context(|| format!("posting {text}"))?;
        let wc = s.poll_until(&format!("{text}: the completion"), |h| {
            Ok(peer.poll(h)?.into_iter().next())
        })?;
        let extra = if matches!(op, Op::FetchAdd(_) | Op::CmpSwap(_)) {
            let v = peer
                .u64_at(&s.host, ATOMIC_OFF)
                .ok_or_else(|| anyhow!("internal: no atomic result"))?;
            format!(" original={v}")
        } else {
            String::new()
        };
        writeln!(out, "{text}: {}{extra}", wc_line(&wc))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_immediates_are_byte_swapped_on_the_wire() {
        // verbs_imm_atomic.pcap: wr_id 1 carries ImmDt 0x45332211, wr_id 2 0x02776655.
        assert_eq!(script_imm(0x1122_3344, 1), 0x4533_2211);
        assert_eq!(script_imm(0x5566_7700, 2), 0x0277_6655);
    }

    #[test]
    fn default_ops_parse_in_order() {
        let ops: Vec<Op> = parse_ops(DEFAULT_OPS)
            .unwrap()
            .into_iter()
            .map(|(_, o)| o)
            .collect();
        assert_eq!(
            ops,
            vec![
                Op::SendImm(64),
                Op::WriteImm(64),
                Op::WriteImm(8192),
                Op::SendImm(8192),
                Op::FetchAdd(5),
                Op::CmpSwap(7)
            ]
        );
        assert!(parse_ops("nope:1").is_err());
        assert!(parse_ops("send:99999").is_err());
    }
}
