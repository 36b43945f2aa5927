//! `--peer-format perftest`: perftest 4.5's exchange (roce::oob::perftest) on either side, run
//! through the out-of-band thread so the poll loop keeps answering ARP while the peer (a real
//! `ib_write_bw`, `ib_read_bw`, `ib_send_bw`, `ib_write_lat`, `ib_send_lat`, ...) talks. Every
//! step is symmetric; what differs per tool is how many key exchanges come before the traffic and
//! what follows it ([`Flow`]). Not here: the traffic.

use anyhow::{anyhow, Context};

use roce::oob::perftest;
use roce::oob::perftest::{BwReport, PerftestDest, SysData};
use roce_proto::psn::Psn;
use roce_proto::resolving::ResolvingEndpoint;

use super::report::Bw;
use super::{Dest, Test};
use crate::cli::session::{Oob, Req, Session};

/// What perftest 4.5-0.17 does around the traffic of one test (read from its `*_bw.c` /
/// `*_lat.c`, checked against rxe-to-rxe captures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Flow {
    /// Key exchanges before the traffic (the first one carries the real keys).
    pub pre: usize,
    /// After the traffic: a barrier, then the client's report (`xchg_bw_reports`).
    pub report: bool,
    /// Then `ctx_close_connection`: keys once more and `"done"` (ib_write_lat has none).
    pub close: bool,
}

impl Flow {
    /// The flow of `test`'s perftest tool.
    pub(super) fn of(test: Test) -> Flow {
        match test {
            Test::WriteBw | Test::ReadBw => Flow {
                pre: 3,
                report: true,
                close: true,
            },
            Test::SendBw | Test::SendLat | Test::ReadLat | Test::AtomicLat => Flow {
                pre: 4,
                report: false,
                close: true,
            },
            Test::WriteLat => Flow {
                pre: 4,
                report: false,
                close: false,
            },
        }
    }
}

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
    keys_while(s, oob, mine, &mut |_| Ok(()))
}

/// [`keys`], calling `each` on every turn of the poll loop while the peer has not answered.
fn keys_while(
    s: &mut Session,
    oob: &Oob,
    mine: &Dest,
    each: &mut dyn FnMut(&mut ResolvingEndpoint) -> anyhow::Result<()>,
) -> anyhow::Result<Dest> {
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
    let theirs = s.converse(oob, Req::Exchange("perftest keys", dest.encode()), each)?;
    let t = PerftestDest::decode(&theirs, true).context("the peer's perftest keys")?;
    Ok(Dest {
        qpn: t.qpn,
        psn: t.psn.value(),
        rkey: t.rkey,
        addr: t.vaddr,
        gid: t.gid.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED),
    })
}

/// What follows the traffic: the end barrier and the report exchange (bandwidth tests), then the
/// close. `bw` is our report (the client's; a server sends zeros, as perftest's is
/// uninitialised); returns the peer's report when there was one. `each` runs while we wait (a
/// server keeps serving the client's traffic until the client's barrier arrives).
pub(super) fn finish(
    s: &mut Session,
    oob: &Oob,
    mine: &Dest,
    flow: Flow,
    bw: Option<&Bw>,
    gbits: bool,
    each: &mut dyn FnMut(&mut ResolvingEndpoint) -> anyhow::Result<()>,
) -> anyhow::Result<Option<BwReport>> {
    let mut theirs = None;
    if flow.report {
        keys_while(s, oob, mine, each)?;
        let unit = |bps: f64| {
            if gbits {
                bps * 8.0 / 1e9
            } else {
                bps / f64::from(1u32 << 20)
            }
        };
        let report = bw.map_or_else(BwReport::default, |bw| BwReport {
            size: bw.size,
            iters: bw.iters,
            bw_peak: unit(bw.peak),
            bw_avg: unit(bw.avg),
            msg_rate_avg: bw.msg_rate / 1e6,
        });
        let mut parts = [[0u8; 8]; 5];
        for (part, out) in report.encode().iter().zip(parts.iter_mut()) {
            let got = exchange(s, oob, "perftest report", part.to_vec())?;
            *out = got
                .try_into()
                .map_err(|_| anyhow!("the peer's perftest report has the wrong size"))?;
        }
        theirs = Some(BwReport::decode(&parts));
    }
    if flow.close {
        keys_while(s, oob, mine, each)?;
        s.ask(oob, Req::Send("send done", perftest::DONE.to_vec()))?;
    }
    Ok(theirs)
}

/// A bandwidth line from the peer's report (its numbers are in the units `gbits` names).
pub(super) fn bw_from_report(r: &BwReport, gbits: bool) -> Bw {
    let bytes = |v: f64| {
        if gbits {
            v * 1e9 / 8.0
        } else {
            v * f64::from(1u32 << 20)
        }
    };
    Bw {
        size: r.size,
        iters: r.iters,
        peak: bytes(r.bw_peak),
        avg: bytes(r.bw_avg),
        msg_rate: r.msg_rate_avg * 1e6,
    }
}
