//! `roce port bench`: bare Ethernet frames between two processes over one DPDK port each, the
//! way perftest's `raw_ethernet_bw` measures a link without RDMA: the sender allocates, stamps
//! and bursts frames as fast as the port takes them; the receiver counts them and times the
//! stretch from the first to the last. It is the ceiling a transport on the same ports is held
//! against (docs/port.md, BENCHMARKS.md). Not here: RoCE (see `roce perf`).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Args;

use roce_dpdk::{
    memif, DpdkError, DpdkPort, Eal, EalConfig, Mbuf, MemifRole, Mempool, MempoolConfig,
    PortConfig, PortSpec,
};
use roce_proto::port::{FrameBuf, Port};
use roce_proto::size::parse_bytes;

use super::quiet_eal_args;

/// The EtherType of the frames: IEEE 802's "local experimental" one, which no stack answers.
const ETHERTYPE: [u8; 2] = [0x88, 0xb5];
/// Ethernet header, then the frame's sequence number (then, in the receiver's report, the
/// count of frames it got).
const HEADER_LEN: usize = 14 + 8;
/// Frames per burst.
const BURST: usize = 32;
/// The receiver stops once no frame came for this long after the first.
const IDLE: Duration = Duration::from_secs(1);
/// Empty polls between two looks at the clock (a clock read costs more than a poll).
const POLLS_PER_CLOCK: u32 = 1024;

/// Arguments of `roce port bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The port: null | ring | tap[:IFNAME] | af_packet:IFNAME | memif:SOCKET[,server|client] |
    /// af_xdp:IFNAME[,QUEUE][,prog=PATH] | pci:ADDRESS (a memif port's role defaults to server
    /// for the receiver, client for the sender).
    #[arg(long)]
    pub port: PortSpec,
    /// Send (without it: receive).
    #[arg(long)]
    pub send: bool,
    /// Frame size in bytes, Ethernet header included, FCS not (60 to 1514; the default is an
    /// IPv4 RDMA WRITE Middle frame of a 1024-byte MTU: 14 + 20 + 8 + 12 + 1024 + 4).
    #[arg(short = 's', long = "size", default_value = "1082", value_parser = parse_bytes)]
    pub size: u64,
    /// Frames to send, or to expect.
    #[arg(short = 'n', long = "frames", default_value_t = 1_000_000)]
    pub frames: u64,
    /// Seconds to wait for the link and, receiving, for the first frame.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// Extra EAL arguments (e.g. "-l 1").
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub eal: String,
}

/// What one side counted.
#[derive(Debug, Default, PartialEq)]
struct Tally {
    frames: u64,
    bytes: u64,
    /// From the first frame to the last.
    elapsed: Duration,
}

impl Tally {
    fn line(&self, verb: &str) -> String {
        let s = self.elapsed.as_secs_f64();
        let (fps, mbps) = if s > 0.0 {
            (
                self.frames as f64 / s,
                self.bytes as f64 / s / f64::from(1 << 20),
            )
        } else {
            (0.0, 0.0)
        };
        format!(
            "{verb} {} frames, {} bytes in {s:.6} s: {:.4} Mframes/s, {mbps:.2} MB/s of frames",
            self.frames,
            self.bytes,
            fps / 1e6
        )
    }
}

/// Runs `roce port bench`.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if !(60..=1514).contains(&args.size) {
        bail!("--size {}: a frame is 60 to 1514 bytes", args.size);
    }
    if args.frames == 0 {
        bail!("--frames 0: nothing to measure");
    }
    let timeout = Duration::from_secs(args.timeout.max(1));
    let role = if args.send {
        MemifRole::Client
    } else {
        MemifRole::Server
    };
    let spec = args.port.clone().with_default_role(role);
    memif::prepare(&spec, timeout).with_context(|| format!("--port {spec}"))?;
    let mut eal_args = quiet_eal_args(&args.eal);
    for a in spec.eal_args(0) {
        eal_args.push(' ');
        eal_args.push_str(&shlex::try_quote(&a).unwrap_or_default());
    }
    let eal = Eal::init(&EalConfig::new(eal_args)).map_err(|e| match e {
        DpdkError::NoPorts => match spec.missing_privilege() {
            Some(why) => anyhow!("--port {spec}: {why}"),
            None => anyhow!("--port {spec}: DPDK created no port"),
        },
        e => anyhow!("--port {spec}: {e}"),
    })?;
    let id = *eal
        .port_ids()
        .first()
        .ok_or_else(|| anyhow!("--port {spec}: DPDK created no port"))?;
    let pool = Arc::new(Mempool::new(&eal, &MempoolConfig::for_frames(1518, 8191))?);
    let config = PortConfig {
        link_timeout: timeout,
        ..PortConfig::default()
    };
    let port = DpdkPort::new(&eal, id, pool.clone(), &config)
        .with_context(|| format!("bringing up --port {spec}"))?;
    let size = usize::try_from(args.size)?;
    let mut link = Link {
        port,
        pool,
        timeout,
        rx: Vec::with_capacity(BURST),
    };
    if args.send {
        let tally = link.send(size, args.frames)?;
        writeln!(out, "{}", tally.line("sent"))?;
        let counted = link.await_report()?;
        writeln!(out, "the receiver counted {counted} frames")?;
        if counted < args.frames {
            bail!(
                "the receiver counted {counted} of {} frames: {} lost",
                args.frames,
                args.frames - counted
            );
        }
        return Ok(());
    }
    let (tally, other) = link.receive(args.frames)?;
    link.report(tally.frames)?;
    writeln!(out, "{}", tally.line("received"))?;
    if other > 0 {
        writeln!(out, "ignored {other} frames of other kinds")?;
    }
    if tally.frames < args.frames {
        bail!(
            "received {} of {} frames: {} lost (no frame for {} s)",
            tally.frames,
            args.frames,
            args.frames - tally.frames,
            IDLE.as_secs()
        );
    }
    Ok(())
}

/// The sequence number that marks the receiver's report (the count it got follows it).
const REPORT: u64 = u64::MAX;
/// How long the receiver keeps its port open after its report: a memif port that closes drops
/// what its peer has not read yet.
const LINGER: Duration = Duration::from_millis(500);

/// One side's port and what it sends and receives with.
struct Link {
    port: DpdkPort,
    pool: Arc<Mempool>,
    timeout: Duration,
    rx: Vec<Mbuf>,
}

impl Link {
    /// Writes a frame of ours into `m`: broadcast, from the port, sequence number `seq`, then
    /// `value` (the report's count), zeros to `size`.
    fn stamp(&self, m: &mut Mbuf, size: usize, seq: u64, value: u64) -> anyhow::Result<()> {
        if !m.set_frame_len(size) {
            bail!("an mbuf holds no {size}-byte frame");
        }
        let f = m.frame_mut();
        f[..6].fill(0xff);
        f[6..12].copy_from_slice(&self.port.info().mac);
        f[12..14].copy_from_slice(&ETHERTYPE);
        f[14..HEADER_LEN].copy_from_slice(&seq.to_be_bytes());
        f[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&value.to_be_bytes());
        Ok(())
    }

    /// Sends `frames` frames of `size` bytes, each burst retried until the port took it (a
    /// full ring pushes back, it does not drop).
    fn send(&mut self, size: usize, frames: u64) -> anyhow::Result<Tally> {
        let mut burst: Vec<Mbuf> = Vec::with_capacity(BURST);
        let mut seq = 0u64;
        let start = Instant::now();
        let mut stall = Stall::new(self.timeout);
        while seq < frames {
            let n = usize::try_from((frames - seq).min(BURST as u64))?;
            if !self.pool.alloc_bulk(&mut burst, n) {
                // The port still holds mbufs it has not sent: let it drain.
                if stall.idle() {
                    bail!(
                        "the mbuf pool stayed empty for {} s",
                        self.timeout.as_secs()
                    );
                }
                continue;
            }
            for m in &mut burst {
                self.stamp(m, size, seq, 0)?;
                seq += 1;
            }
            while !burst.is_empty() {
                if self.port.tx_burst(&mut burst) > 0 {
                    stall.progress();
                } else if stall.idle() {
                    bail!(
                        "the port took no frame for {} s ({seq} of {frames} stamped)",
                        self.timeout.as_secs()
                    );
                }
            }
        }
        Ok(Tally {
            frames,
            bytes: frames * size as u64,
            elapsed: start.elapsed(),
        })
    }

    /// Counts our frames until `frames` arrived or none came for [`IDLE`] after the first; also
    /// returns how many frames of other kinds were ignored.
    fn receive(&mut self, frames: u64) -> anyhow::Result<(Tally, u64)> {
        let (mut before_first, mut after_last) = (Stall::new(self.timeout), Stall::new(IDLE));
        let mut first: Option<Instant> = None;
        let mut last = Instant::now();
        let mut tally = Tally::default();
        let mut other = 0u64;
        while tally.frames < frames {
            if self.port.rx_burst(&mut self.rx, BURST) > 0 {
                let now = Instant::now();
                for m in self.rx.drain(..) {
                    let f = m.frame();
                    if f.len() >= HEADER_LEN && f[12..14] == ETHERTYPE {
                        tally.frames += 1;
                        tally.bytes += f.len() as u64;
                        first.get_or_insert(now);
                        last = now;
                    } else {
                        other += 1;
                    }
                }
                after_last.progress();
            } else if first.is_some() {
                if after_last.idle() {
                    break;
                }
            } else if before_first.idle() {
                bail!("no frame arrived within {} s", self.timeout.as_secs());
            }
        }
        tally.elapsed = first.map_or(Duration::ZERO, |f| last - f);
        Ok((tally, other))
    }

    /// Tells the sender how many frames arrived, then keeps the port open for [`LINGER`] so
    /// the report is read.
    fn report(&mut self, counted: u64) -> anyhow::Result<()> {
        let mut m = self
            .pool
            .alloc()
            .ok_or_else(|| anyhow!("no mbuf left for the report"))?;
        self.stamp(&mut m, 60, REPORT, counted)?;
        let mut burst = vec![m];
        let mut stall = Stall::new(self.timeout);
        while !burst.is_empty() {
            if self.port.tx_burst(&mut burst) == 0 && stall.idle() {
                bail!("the port took no report for {} s", self.timeout.as_secs());
            }
        }
        let end = Instant::now() + LINGER;
        while Instant::now() < end {
            self.port.rx_burst(&mut self.rx, BURST);
            self.rx.clear();
        }
        Ok(())
    }

    /// Waits for the receiver's report (as long as it waits for a last frame, and the
    /// timeout); returns the count in it.
    fn await_report(&mut self) -> anyhow::Result<u64> {
        let mut stall = Stall::new(IDLE + self.timeout);
        loop {
            if self.port.rx_burst(&mut self.rx, BURST) > 0 {
                for m in self.rx.drain(..) {
                    let f = m.frame();
                    if f.len() >= HEADER_LEN + 8
                        && f[12..14] == ETHERTYPE
                        && f[14..HEADER_LEN] == REPORT.to_be_bytes()
                    {
                        let mut count = [0u8; 8];
                        count.copy_from_slice(&f[HEADER_LEN..HEADER_LEN + 8]);
                        return Ok(u64::from_be_bytes(count));
                    }
                }
            } else if stall.idle() {
                bail!(
                    "no report from the receiver within {} s",
                    (IDLE + self.timeout).as_secs()
                );
            }
        }
    }
}

/// Tells a wait that has made no progress for `limit` from a busy one, reading the clock only
/// once per [`POLLS_PER_CLOCK`] idle polls.
struct Stall {
    /// The first clock read of the current idle stretch.
    since: Option<Instant>,
    limit: Duration,
    polls: u32,
}

impl Stall {
    fn new(limit: Duration) -> Self {
        Stall {
            since: None,
            limit,
            polls: 0,
        }
    }

    /// Something moved: the idle stretch ends.
    fn progress(&mut self) {
        self.since = None;
        self.polls = 0;
    }

    /// Nothing moved this poll; `true` once nothing has for about `limit`.
    fn idle(&mut self) -> bool {
        self.polls += 1;
        if self.polls % POLLS_PER_CLOCK != 0 {
            return false;
        }
        let now = Instant::now();
        now - *self.since.get_or_insert(now) > self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_gives_rates_from_first_to_last_frame() {
        let t = Tally {
            frames: 2_000_000,
            bytes: 2_000_000 * 1024,
            elapsed: Duration::from_secs(2),
        };
        assert_eq!(
            t.line("received"),
            "received 2000000 frames, 2048000000 bytes in 2.000000 s: 1.0000 Mframes/s, 976.56 MB/s of frames"
        );
        assert!(Tally::default()
            .line("sent")
            .ends_with("0.0000 Mframes/s, 0.00 MB/s of frames"));
    }
}
