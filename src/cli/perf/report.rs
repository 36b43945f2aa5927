//! perftest's output: the dashed banner, the key lines, and the bandwidth and latency result
//! lines with perftest's column names, computed from completion times. Formatting and
//! arithmetic only.

use std::collections::VecDeque;
use std::io::Write;

use roce::oob::perf::{Hello, Test};

use super::Qp;

/// perftest's separator line.
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";

/// The bandwidth header (`--report_gbits` switches the unit).
pub fn bw_header(gbits: bool) -> String {
    let unit = if gbits { "Gb/sec" } else { "MB/sec" };
    format!(" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]")
}

/// The latency header.
pub const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";

/// One bandwidth measurement.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bw {
    /// Message size.
    pub size: u64,
    /// Iterations (per QP).
    pub iters: u64,
    /// Best windowed bandwidth, bytes per second.
    pub peak: f64,
    /// Average bandwidth, bytes per second.
    pub avg: f64,
    /// Messages per second.
    pub msg_rate: f64,
}

impl Bw {
    /// From message completions: `times` are completion instants in ns since the start (sorted),
    /// `window` the number of completions a peak window spans (runs use [`BwMeter`]).
    #[cfg(test)]
    pub fn from_completions(size: u64, iters: u64, times: &[u64], window: usize) -> Bw {
        let mut meter = BwMeter::new(size, window);
        for &t in times {
            meter.record(t);
        }
        meter.finish(iters)
    }

    /// perftest's result line.
    pub fn line(&self, gbits: bool) -> String {
        let unit = |bps: f64| {
            if gbits {
                bps * 8.0 / 1e9
            } else {
                bps / f64::from(1u32 << 20)
            }
        };
        format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}",
            self.size,
            self.iters,
            unit(self.peak),
            unit(self.avg),
            self.msg_rate / 1e6
        )
    }
}

/// Bandwidth from completion instants as they come, in memory of one peak window whatever the
/// run's length: the count, the last instant, and the shortest span of `window` consecutive
/// completions (the peak window; the first one starts at 0).
#[derive(Clone, Debug)]
pub struct BwMeter {
    size: u64,
    window: usize,
    count: u64,
    last: u64,
    /// The (up to) `window` instants before the newest; 0 stands for the start.
    recent: VecDeque<u64>,
    /// The shortest span of a full window, ns.
    shortest: Option<u64>,
}

impl BwMeter {
    /// A meter for messages of `size` bytes, peak over `window` completions (at least 1).
    pub fn new(size: u64, window: usize) -> Self {
        let window = window.max(1);
        let mut recent = VecDeque::with_capacity(window.min(4096) + 1);
        recent.push_back(0);
        BwMeter {
            size,
            window,
            count: 0,
            last: 0,
            recent,
            shortest: None,
        }
    }

    /// One completion at `t` ns since the start (instants come sorted).
    pub fn record(&mut self, t: u64) {
        self.count += 1;
        self.last = t;
        if self.recent.len() == self.window {
            let start = self.recent.front().copied().unwrap_or(0);
            let span = t.saturating_sub(start).max(1);
            self.shortest = Some(self.shortest.map_or(span, |s| s.min(span)));
        }
        self.recent.push_back(t);
        if self.recent.len() > self.window {
            self.recent.pop_front();
        }
    }

    /// Completions so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The measurement (`iters` as reported).
    pub fn finish(&self, iters: u64) -> Bw {
        let n = self.count as f64;
        let size = self.size as f64;
        let total = self.last.max(1) as f64 / 1e9;
        let avg = n * size / total;
        // Fewer completions than a window: the one window is the whole run.
        let peak = self.shortest.map_or(avg, |dt| {
            avg.max(self.window as f64 * size / (dt as f64 / 1e9))
        });
        Bw {
            size: self.size,
            iters,
            peak,
            avg,
            msg_rate: n / total,
        }
    }
}

/// Latency statistics in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lat {
    /// Message size.
    pub size: u64,
    /// Iterations.
    pub iters: u64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Median.
    pub typical: f64,
    /// Mean.
    pub avg: f64,
    /// Standard deviation.
    pub stdev: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

impl Lat {
    /// From samples in nanoseconds, each divided by `divisor` (2 for round trips reported as
    /// one-way, as ib_write_lat and ib_send_lat do).
    pub fn from_samples(size: u64, samples: &[u64], divisor: f64) -> Lat {
        let mut us: Vec<f64> = samples.iter().map(|&s| s as f64 / 1e3 / divisor).collect();
        us.sort_by(f64::total_cmp);
        let n = us.len().max(1) as f64;
        let avg = us.iter().sum::<f64>() / n;
        let var = us.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n;
        let pct = |p: f64| {
            let i = ((p * n).ceil() as usize).saturating_sub(1);
            us.get(i.min(us.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0.0)
        };
        Lat {
            size,
            iters: samples.len() as u64,
            min: us.first().copied().unwrap_or(0.0),
            max: us.last().copied().unwrap_or(0.0),
            typical: pct(0.5),
            avg,
            stdev: var.sqrt(),
            p99: pct(0.99),
            p999: pct(0.999),
        }
    }

    /// perftest's result line.
    pub fn line(&self) -> String {
        format!(
            " {:<7} {:<10}     {:<7.2}        {:<7.2}      {:<7.2}  \t{:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}",
            self.size,
            self.iters,
            self.min,
            self.max,
            self.typical,
            self.avg,
            self.stdev,
            self.p99,
            self.p999
        )
    }
}

/// A GID as perftest prints it: sixteen bytes in decimal (`...:255:255:198:18:00:01`).
fn perftest_gid(gid: std::net::Ipv6Addr) -> String {
    let parts: Vec<String> = gid.octets().iter().map(|b| format!("{b:02}")).collect();
    parts.join(":")
}

/// perftest's banner: the test, its parameters, each QP's keys and ours, the result header.
pub(super) fn print_banner(
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
    if hello.selective_repeat {
        // roce's own line (perftest has no such mode): both sides agreed to it.
        writeln!(out, " Recovery        : selective repeat")?;
    }
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
        writeln!(out, "{}", bw_header(gbits))?;
    } else {
        writeln!(out, "{LAT_HEADER}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bw_line_has_perftest_columns_in_mib() {
        // 4 messages of 1 MiB over 4 ms: 1000 MiB/s average.
        let bw = Bw::from_completions(1 << 20, 4, &[1_000_000, 2_000_000, 3_000_000, 4_000_000], 1);
        let cols: Vec<f64> = bw
            .line(false)
            .split_whitespace()
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(cols, vec![1048576.0, 4.0, 1000.0, 1000.0, 0.001]);
    }

    #[test]
    fn peak_is_the_best_window() {
        // The second message completes 0.5 ms after the first: a 2 GiB/s window.
        let bw = Bw::from_completions(1 << 20, 3, &[1_000_000, 1_500_000, 3_000_000], 1);
        assert!((bw.peak - 2_097_152_000.0).abs() < 1.0, "{}", bw.peak);
    }

    #[test]
    fn meter_matches_the_peak_over_every_window() {
        // Irregular completions: the meter (one window of memory) finds the same peak as a
        // scan of every window of the whole list.
        let times: Vec<u64> = (1..=500u64)
            .map(|i| i * 1000 + (i * i * 7919) % 3000)
            .collect();
        let mut sorted = times.clone();
        sorted.sort_unstable();
        for window in [1, 2, 7, 128, 499, 500, 501] {
            let bw = Bw::from_completions(4096, 500, &sorted, window);
            let w = window.clamp(1, sorted.len());
            let mut peak = bw.avg;
            for j in 0..=(sorted.len() - w) {
                let start = if j == 0 { 0 } else { sorted[j - 1] };
                let dt = (sorted[j + w - 1] - start).max(1) as f64 / 1e9;
                peak = peak.max(w as f64 * 4096.0 / dt);
            }
            assert_eq!(bw.peak, peak, "window {window}");
        }
        let empty = Bw::from_completions(64, 0, &[], 16);
        assert_eq!((empty.peak, empty.avg, empty.msg_rate), (0.0, 0.0, 0.0));
    }

    #[test]
    fn latency_percentiles_of_a_hundred_samples() {
        let samples: Vec<u64> = (1..=100).map(|i| i * 2000).collect();
        let lat = Lat::from_samples(2, &samples, 2.0);
        assert_eq!((lat.min, lat.max, lat.typical), (1.0, 100.0, 50.0));
        assert_eq!((lat.p99, lat.p999), (99.0, 100.0));
        assert_eq!(lat.avg, 50.5);
        assert_eq!(lat.line().split_whitespace().count(), 9);
    }
}
