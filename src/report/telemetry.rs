//! The telemetry CSVs of `roce sim ... --out DIR`: `ports.csv` (per port and priority that saw
//! traffic: queue depth, drops by reason, PFC, ECN marks), `hosts.csv` (per host: CNPs,
//! retransmissions, timeouts, NAKs, QP errors, pauses) and `buffers.csv` (per switch: its
//! shared buffer's occupancy), one row per series and bin.
//!
//! Counters are what happened in the bin (a column sums to the summary's total); queue depths
//! are the mean and largest of the samples taken in the bin; `qp_errors` is a level.

use std::fmt::Write as _;

use roce_fabric::record::telemetry::{HostCounters, Telemetry};
use roce_fabric::switching::stats::{DropReasons, PrioCounters};
use roce_proto::engine::Engine;

/// The drop reasons `ports.csv` has a column for: all but the PFC watchdog's unless a switch
/// ran one (`watchdog`), so that a run without one writes the file it always wrote.
fn drop_columns(watchdog: bool) -> impl Iterator<Item = usize> {
    let names = DropReasons::NAMES.iter().enumerate();
    let shown = names.filter(move |(_, n)| watchdog || **n != "pfc_watchdog");
    shown.map(|(i, _)| i)
}

/// The header of `ports.csv`; with `watchdog` (a switch ran a PFC watchdog) it has the
/// watchdog's drops, storms detected and restored too.
pub fn ports_header(watchdog: bool) -> String {
    let mut s = String::from(
        "time_us,node,port,priority,queue_mean_bytes,queue_max_bytes,tx_packets,tx_bytes,rx_packets,rx_bytes,ecn_marked,drops",
    );
    for i in drop_columns(watchdog) {
        let _ = write!(s, ",drop_{}", DropReasons::NAMES[i]);
    }
    if watchdog {
        s.push_str(",pfc_wd_storms,pfc_wd_restored");
    }
    s.push_str(",tx_pause,rx_pause,rx_pause_duration_us");
    s
}

/// `ports.csv`: see the module's description and [`ports_header`].
pub fn ports_csv<E: Engine>(t: &Telemetry<E>) -> String {
    let watchdog = t.watchdog();
    let mut s = ports_header(watchdog);
    s.push('\n');
    let series: Vec<_> = t.series().collect();
    let zero = PrioCounters::default();
    let mut prev: Option<&[PrioCounters]> = None;
    for bin in &t.bins {
        for (i, (node, port, prio)) in series.iter().enumerate() {
            if !t.active(i) {
                continue;
            }
            let before = prev.and_then(|p| p.get(i)).unwrap_or(&zero);
            let c = bin.ports.get(i).unwrap_or(&zero).since(before);
            let (mean, max) = bin.queue.get(i).copied().unwrap_or_default();
            let lead = format!(
                "{:.3},{node},{port},{prio},{mean:.1},{max}",
                us(bin.end.as_nanos())
            );
            let counts = [
                c.tx_packets,
                c.tx_bytes,
                c.rx_packets,
                c.rx_bytes,
                c.ecn_marked,
                c.drops,
            ];
            let pairs = c.dropped.pairs();
            let dropped = drop_columns(watchdog).filter_map(|i| pairs.get(i).map(|p| p.1));
            let storms = [c.pfc_wd_storms, c.pfc_wd_restored];
            let storms = storms.into_iter().filter(|_| watchdog);
            let pauses = [c.pause_sent, c.pause_received];
            push_row(
                &mut s,
                &lead,
                counts
                    .into_iter()
                    .chain(dropped)
                    .chain(storms)
                    .chain(pauses),
                c.pause_ns,
            );
        }
        prev = Some(&bin.ports);
    }
    s
}

/// `hosts.csv`: per host and bin, its transport's counters and its NIC's pauses.
pub fn hosts_csv<E: Engine>(t: &Telemetry<E>) -> String {
    let mut s = String::from(
        "time_us,host,np_ecn_marked_roce_packets,np_cnp_sent,rp_cnp_handled,retransmitted_packets,local_ack_timeout_err,naks,error_completions,qp_errors,rx_pause,rx_pause_duration_us\n",
    );
    let names = t.host_names();
    let zero = HostCounters::default();
    let mut prev: Option<&roce_fabric::record::telemetry::Bin> = None;
    for bin in &t.bins {
        for (h, name) in names.iter().enumerate() {
            let before = prev.and_then(|p| p.hosts.get(h)).unwrap_or(&zero);
            let c = bin.hosts.get(h).unwrap_or(&zero).since(before);
            let p = t
                .nic(&bin.ports, h)
                .since(&prev.map_or(PrioCounters::default(), |b| t.nic(&b.ports, h)));
            let counts = [
                c.np_ecn_marked_roce_packets,
                c.np_cnp_sent,
                c.rp_cnp_handled,
                c.retransmitted_packets,
                c.local_ack_timeout_err,
                c.naks,
                c.error_completions,
                c.qp_errors,
                p.pause_received,
            ];
            let lead = format!("{:.3},{name}", us(bin.end.as_nanos()));
            push_row(&mut s, &lead, counts, p.pause_ns);
        }
        prev = Some(bin);
    }
    s
}

/// `buffers.csv`: per switch whose buffer held anything and bin, the mean and largest sampled
/// occupancy.
pub fn buffers_csv<E: Engine>(t: &Telemetry<E>) -> String {
    let mut s = String::from("time_us,node,buffer_bytes,mean_bytes,max_bytes\n");
    let switches: Vec<(&str, u64)> = t.switches().collect();
    let held: Vec<bool> = (0..switches.len())
        .map(|i| {
            t.bins
                .iter()
                .any(|b| b.buffer.get(i).is_some_and(|&(_, m)| m > 0))
        })
        .collect();
    for bin in &t.bins {
        for (i, (node, bytes)) in switches.iter().enumerate() {
            if !held[i] {
                continue;
            }
            let (mean, max) = bin.buffer.get(i).copied().unwrap_or_default();
            let _ = writeln!(
                s,
                "{:.3},{node},{bytes},{mean:.1},{max}",
                us(bin.end.as_nanos())
            );
        }
    }
    s
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// One CSV line: `lead`, then `counts`, then `paused_ns` in µs.
fn push_row(s: &mut String, lead: &str, counts: impl IntoIterator<Item = u64>, paused_ns: u64) {
    s.push_str(lead);
    for n in counts {
        let _ = write!(s, ",{n}");
    }
    let _ = writeln!(s, ",{:.3}", us(paused_ns));
}
