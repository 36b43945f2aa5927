//! `roce oob`: speak only the connection-setup exchange of ibv_rc_pingpong, perftest or the
//! pyverbs peer against the real tool, and print what the peer sent as one JSON line. For
//! debugging setups and for tools/interop/run.sh; no QP is created (the peer's traffic fails).

use std::io::Write;
use std::net::{Ipv6Addr, SocketAddr, TcpListener};
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;

use roce::oob::perftest;
use roce::oob::perftest::{BwReport, PerftestDest, SysData};
use roce::oob::pingpong::PingpongDest;
use roce::oob::tcp;
use roce::oob::tcp::{OobStream, PerftestConn, Timeouts};
use roce::oob::verbs_peer::VerbsPeerInfo;
use roce_proto::psn::Psn;

use crate::cli::output::{self, write_json, Json};

/// Subcommands of `roce oob`.
#[derive(Subcommand, Debug)]
pub enum OobCommand {
    /// Be the client of `ibv_rc_pingpong` (the server runs without a host argument).
    PingpongClient {
        /// The server, e.g. 198.18.0.11:18515.
        addr: SocketAddr,
        #[command(flatten)]
        ours: Ours,
    },
    /// Be the server `ibv_rc_pingpong <host>` connects to.
    PingpongServer {
        /// Where to listen (every interface by default, said on stderr).
        #[arg(long, default_value = "0.0.0.0:18515")]
        listen: SocketAddr,
        #[command(flatten)]
        ours: Ours,
    },
    /// Be the client of a perftest bandwidth server (`ib_write_bw -x 1 -F`, ...): preamble,
    /// key hand shakes, an empty report, done.
    PerftestClient {
        /// The server, e.g. 198.18.0.11:18515.
        addr: SocketAddr,
        #[command(flatten)]
        ours: Ours,
    },
    /// Be the client of `rc_verbs_peer.py server`.
    VerbsPeerClient {
        /// The server, e.g. 198.18.0.11:18516.
        addr: SocketAddr,
        #[command(flatten)]
        ours: Ours,
    },
}

/// What we announce.
#[derive(Args, Debug)]
pub struct Ours {
    /// Our QP number.
    #[arg(long, default_value = "0x000abc", value_parser = parse_hex)]
    qpn: u32,
    /// Our first PSN.
    #[arg(long, default_value = "0x123456", value_parser = parse_hex)]
    psn: u32,
    /// Our GID.
    #[arg(long, default_value = "::ffff:198.18.0.2")]
    gid: Ipv6Addr,
    /// Seconds for each wait (connect, accept, read, write).
    #[arg(long, default_value_t = 10)]
    timeout: u64,
}

fn parse_hex(s: &str) -> Result<u32, String> {
    let digits = s.strip_prefix("0x").unwrap_or(s);
    u32::from_str_radix(digits, 16).map_err(|e| format!("{s}: {e}"))
}

impl Ours {
    fn timeouts(&self) -> Timeouts {
        let t = Duration::from_secs(self.timeout);
        Timeouts {
            connect: t,
            accept: t,
            io: t,
        }
    }
    fn pingpong(&self) -> PingpongDest {
        PingpongDest {
            lid: 0,
            qpn: self.qpn,
            psn: Psn::new(self.psn),
            gid: self.gid,
        }
    }
}

/// Runs a `roce oob` subcommand: what the peer sent, as one JSON line on `out`.
pub fn run(cmd: OobCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    let remote = match cmd {
        OobCommand::PingpongClient { addr, ours } => {
            let r = tcp::pingpong_client(addr, &ours.pingpong(), ours.timeouts())?;
            json!({"qpn": r.qpn, "psn": r.psn.value(), "gid": r.gid.to_string()})
        }
        OobCommand::PingpongServer { listen, ours } => {
            let listener =
                TcpListener::bind(listen).with_context(|| format!("listen on {listen}"))?;
            if let Some(warning) = tcp::every_interface_warning(listen) {
                output::note(warning);
            }
            let mine = ours.pingpong();
            let r = tcp::pingpong_server(&listener, ours.timeouts(), |_| Ok::<_, String>(mine))?;
            json!({"qpn": r.qpn, "psn": r.psn.value(), "gid": r.gid.to_string()})
        }
        OobCommand::PerftestClient { addr, ours } => {
            let mine = PerftestDest {
                lid: 0,
                out_reads: 1,
                qpn: ours.qpn,
                psn: Psn::new(ours.psn),
                rkey: 0,
                vaddr: 0,
                gid: Some(ours.gid),
                srqn: 0,
            };
            let mut conn = PerftestConn::new(OobStream::connect(addr, ours.timeouts())?, true);
            let pre = conn.preamble(perftest::DEBIAN12_VERSION, SysData::default(), 1024)?;
            let r = conn.hand_shake(&mine)?;
            for _ in 0..3 {
                conn.hand_shake(&mine)?;
            }
            conn.xchg_bw_report(&BwReport::default())?;
            conn.close(&mine)?;
            json!({"version": pre.remote_version, "mtu": pre.path_mtu, "qpn": r.qpn,
                   "psn": r.psn.value(), "rkey": r.rkey, "vaddr": r.vaddr,
                   "out_reads": r.out_reads, "gid": r.gid.map(|g| g.to_string())})
        }
        OobCommand::VerbsPeerClient { addr, ours } => {
            let mine = VerbsPeerInfo {
                qpn: ours.qpn,
                psn: Psn::new(ours.psn),
                gid: ours.gid,
                addr: 0,
                rkey: 0,
                atomic_addr: 0,
            };
            let (r, stream) = tcp::verbs_peer_client(addr, &mine, ours.timeouts())?;
            tcp::verbs_peer_finish(stream)?;
            json!({"qpn": r.qpn, "psn": r.psn.value(), "gid": r.gid.to_string(),
                   "addr": r.addr, "rkey": r.rkey, "atomic_addr": r.atomic_addr})
        }
    };
    write_json(out, &remote, Json::Line)?;
    Ok(())
}
