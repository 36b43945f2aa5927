//! `--peer-format perftest`: the client's side of perftest 4.5's exchange (roce::oob::perftest),
//! run through the out-of-band thread so the poll loop keeps answering ARP (the server is a
//! real `ib_write_bw`, `ib_read_bw` or `ib_send_bw`). Not here: the server side, latency tests.

use anyhow::{anyhow, Context};

use roce::oob::perftest::{self, BwReport, PerftestDest, SysData};
use roce::psn::Psn;

use super::report::Bw;
use super::session::{Oob, Req, Session};
use super::Dest;

/// Outstanding RDMA READs we offer (perftest's `out_reads`).
const OUT_READS: u16 = 16;

fn exchange(
    s: &mut Session,
    oob: &Oob,
    step: &'static str,
    mine: Vec<u8>,
) -> anyhow::Result<Vec<u8>> {
    s.ask(oob, Req::Exchange(step, mine))
}

/// Version, system data and MTU; returns the path MTU both use.
pub(super) fn preamble(s: &mut Session, oob: &Oob, mtu: u32) -> anyhow::Result<u32> {
    let theirs = exchange(
        s,
        oob,
        "perftest version",
        perftest::encode_version(perftest::DEBIAN12_VERSION).to_vec(),
    )?;
    let version = perftest::decode_version(&theirs).context("the peer's perftest version")?;
    if perftest::version_number(&version) < 5.33 {
        anyhow::bail!("the peer's perftest version {version} is older than 5.33 (unsupported)");
    }
    let sys = SysData {
        cycle_buffer: 4096,
        cache_line_size: 64,
    };
    exchange(
        s,
        oob,
        "perftest cycle buffer",
        sys.cycle_buffer.to_be_bytes().to_vec(),
    )?;
    exchange(
        s,
        oob,
        "perftest cache line size",
        sys.cache_line_size.to_be_bytes().to_vec(),
    )?;
    let code = u16::try_from(mtu)
        .ok()
        .and_then(perftest::encode_mtu)
        .ok_or_else(|| anyhow!("{mtu} is not an IB path MTU"))?;
    let theirs = exchange(s, oob, "perftest mtu", code.to_vec())?;
    let remote = perftest::decode_mtu(&theirs).context("the peer's perftest MTU")?;
    Ok(mtu.min(u32::from(remote)))
}

/// One exchange of keys (perftest repeats it as a barrier).
pub(super) fn keys(s: &mut Session, oob: &Oob, mine: &Dest) -> anyhow::Result<Dest> {
    let dest = PerftestDest {
        lid: 0,
        out_reads: OUT_READS,
        qpn: mine.qpn,
        psn: Psn::new(mine.psn),
        rkey: mine.rkey,
        vaddr: mine.addr,
        gid: Some(mine.gid),
        srqn: 0,
    };
    let theirs = exchange(s, oob, "perftest keys", dest.encode())?;
    let t = PerftestDest::decode(&theirs, true).context("the peer's perftest keys")?;
    Ok(Dest {
        qpn: t.qpn,
        psn: t.psn.value(),
        rkey: t.rkey,
        addr: t.vaddr,
        gid: t.gid.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED),
    })
}

/// The end barrier, the report exchange and the close.
pub(super) fn finish(
    s: &mut Session,
    oob: &Oob,
    mine: &Dest,
    bw: &Bw,
    gbits: bool,
) -> anyhow::Result<()> {
    keys(s, oob, mine)?;
    let unit = |bps: f64| {
        if gbits {
            bps * 8.0 / 1e9
        } else {
            bps / f64::from(1u32 << 20)
        }
    };
    let report = BwReport {
        size: bw.size,
        iters: bw.iters,
        bw_peak: unit(bw.peak),
        bw_avg: unit(bw.avg),
        msg_rate_avg: bw.msg_rate / 1e6,
    };
    for part in report.encode() {
        exchange(s, oob, "perftest report", part.to_vec())?;
    }
    keys(s, oob, mine)?;
    s.ask(oob, Req::Send("send done", perftest::DONE.to_vec()))?;
    Ok(())
}
