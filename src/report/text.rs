//! The human-readable report of `roce demo`: the setup in plain words, the perftest-style flow
//! table, the congestion story (marks, CNPs, rate cuts, sparklines), the counters under their
//! mlx5/rxe names and the verdict. Printing only; the numbers come from [`DemoSummary`].

use std::io::{self, Write};
use std::path::PathBuf;

use super::demo::{flow_table, story, DemoSummary, Series};

/// Files the run wrote, to point the reader at.
#[derive(Clone, Debug, Default)]
pub struct Files {
    /// The capture (`--pcap`).
    pub pcap: Option<PathBuf>,
    /// The time-series directory (`--out`).
    pub out: Option<PathBuf>,
}

/// Prints the whole report: setup, perftest-style flows, the congestion story, the counters and
/// the verdict.
pub fn print(
    out: &mut dyn Write,
    s: &DemoSummary,
    series: &Series,
    files: &Files,
) -> io::Result<()> {
    print_setup(out, s)?;
    writeln!(out, "Results per flow (perftest style)")?;
    write!(out, "{}", flow_table(&s.flows))?;
    writeln!(out)?;
    print_story(out, s, series)?;
    print_verdict(out, s, files)
}

/// The setup in plain words: ports, switch, hosts, flows, how long.
fn print_setup(out: &mut dyn Write, s: &DemoSummary) -> io::Result<()> {
    let u = &s.setup;
    let senders: Vec<&str> = u.senders.iter().map(String::as_str).collect();
    writeln!(
        out,
        "roce demo: {} sender(s) {} -> receiver r through a software switch, real time, one thread",
        senders.len(),
        senders.join(" ")
    )?;
    writeln!(
        out,
        "  ports    DPDK net_ring pairs (host <-> switch){}",
        u.tap.as_deref().map_or(String::new(), |i| format!(
            "; every switched frame mirrored to net_tap `{i}` (tcpdump -i {i})"
        ))
    )?;
    writeln!(
        out,

        "  switch   port to r: {:.2} Gbit/s bottleneck, {} KB shared buffer, tail drop, RED/ECN Kmin {} KB Kmax {} KB Pmax {:.2}",
        u.bottleneck_gbps,
        u.buffer_bytes / 1000,
        u.kmin_bytes / 1000,
        u.kmax_bytes / 1000,
        u.pmax
    )?;
    writeln!(
        out,

        "  hosts    line rate {:.1} Gbit/s, congestion control {}, path MTU {}, {} B messages, {} outstanding per QP",
        u.host_gbps,
        u.cc,
        u.mtu,
        u.size,
        u.depth
    )?;
    writeln!(
        out,
        "  flows    one RC QP per sender and operation; WRITE/SEND push data through the bottleneck")?;
    if u.ops.iter().any(|o| o == "read") {
        writeln!(
        out,
        "           READ: r reads from each sender, so the READ responses (the data) cross the bottleneck too, paced by the sender's congestion control")?;
    }
    writeln!(out, "  ran      {:.1} s of traffic\n", s.duration_s)?;
    Ok(())
}

/// The congestion story: what the switch marked, dropped and paused, what the notification
/// point and the senders did, and the sparklines.
fn print_story(out: &mut dyn Write, s: &DemoSummary, series: &Series) -> io::Result<()> {
    let u = &s.setup;
    let c = &s.counters;
    writeln!(out, "The congestion story")?;
    writeln!(
        out,

        "  switch   marked {} packets CE, dropped {}, forwarded {}; sent {:.3} Gbit/s to r; queue to r mean {:.1} KB, max {:.1} KB; {} PFC pause frames",
        s.switch.ecn_marked,
        s.switch.drops,
        s.switch.forwarded,
        s.switch.bottleneck_busy_gbps,
        s.switch.queue_mean_bytes / 1e3,
        s.switch.queue_max_bytes as f64 / 1e3,
        s.switch.pfc_pause_frames
    )?;
    for h in &s.host_pauses {
        writeln!(
            out,
            "  {:<8} got {} PFC pause frames for priority 3, paused {} us, held a frame {} times",
            h.host, h.rx_prio3_pause, h.rx_prio3_pause_duration_us, h.tx_pause_holds
        )?;
    }
    writeln!(
        out,
        "  r (NP)   saw {} CE-marked packets, sent {} CNPs (at most one per QP per {} us)",
        c.np_ecn_marked_roce_packets, c.np_cnp_sent, u.cnp_interval_us
    )?;
    writeln!(
        out,

        "  senders  handled {} CNPs: {} {} rate cuts, {} increases; lowest rate {:.3} Gbit/s (from {:.1})",
        c.rp_cnp_handled,
        s.cc.rate_cuts,
        s.cc.name,
        s.cc.rate_increases,
        s.cc.min_rate_gbps,
        s.cc.line_rate_gbps
    )?;
    write!(out, "{}", story(series, &s.flows, 60))?;
    writeln!(out)?;
    Ok(())
}

/// The counters per port, then the verdict and where the files are.
fn print_verdict(out: &mut dyn Write, s: &DemoSummary, files: &Files) -> io::Result<()> {
    write!(out, "{}", s.stats.port_table(false))?;
    writeln!(out)?;
    if s.verified {
        let msgs: u64 = s.flows.iter().map(|f| f.messages).sum();
        writeln!(
            out,
            "Verified: all {msgs} messages of {} flows arrived byte for byte; no transport errors.",
            s.flows.len()
        )?;
    }
    if let Some(p) = &files.pcap {
        writeln!(
            out,
            "Capture: {} (check it with `roce pcap check {}`)",
            p.display(),
            p.display()
        )?;
    }
    if let Some(d) = &files.out {
        writeln!(
            out,
            "Time series: {}/flows.csv queue.csv cc.csv, plot {}/demo.svg",
            d.display(),
            d.display()
        )?;
    }
    Ok(())
}
