//! The human-readable report of `roce demo`: the setup in plain words, the perftest-style flow
//! table, the congestion story (marks, CNPs, rate cuts, sparklines), the counters under their
//! mlx5/rxe names and the verdict. Printing only; the numbers come from [`Summary`].

use std::path::PathBuf;

use super::report::{flow_table, story, Series, Summary};

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
pub fn print(s: &Summary, series: &Series, files: &Files) {
    let u = &s.setup;
    let senders: Vec<&str> = u.senders.iter().map(String::as_str).collect();
    println!(
        "roce demo: {} sender(s) {} -> receiver r through a software switch, real time, one thread",
        senders.len(),
        senders.join(" ")
    );
    println!(
        "  ports    DPDK net_ring pairs (host <-> switch){}",
        u.tap.as_deref().map_or(String::new(), |i| format!(
            "; every switched frame mirrored to net_tap `{i}` (tcpdump -i {i})"
        ))
    );
    println!(
        "  switch   port to r: {:.2} Gbit/s bottleneck, {} KB shared buffer, tail drop, RED/ECN Kmin {} KB Kmax {} KB Pmax {:.2}",
        u.bottleneck_gbps,
        u.buffer_bytes / 1000,
        u.kmin_bytes / 1000,
        u.kmax_bytes / 1000,
        u.pmax
    );
    println!(
        "  hosts    line rate {:.1} Gbit/s, congestion control {}, path MTU {}, {} B messages, {} outstanding per QP",
        u.host_gbps,
        u.cc,
        u.mtu,
        u.size,
        u.depth
    );
    println!("  flows    one RC QP per sender and operation; WRITE/SEND push data through the bottleneck");
    if u.ops.iter().any(|o| o == "read") {
        println!("           READ pulls from r: its requests cross the bottleneck, its responses take the uncongested port back");
    }
    println!("  ran      {:.1} s of traffic\n", s.duration_s);
    println!("Results per flow (perftest style)");
    print!("{}", flow_table(&s.flows));
    println!();
    let c = &s.counters;
    println!("The congestion story");
    println!(
        "  switch   marked {} packets CE, dropped {}, forwarded {}; sent {:.3} Gbit/s to r; queue to r mean {:.1} KB, max {:.1} KB; {} PFC pause frames",
        s.switch.ecn_marked,
        s.switch.drops,
        s.switch.forwarded,
        s.switch.bottleneck_busy_gbps,
        s.switch.queue_mean_bytes / 1e3,
        s.switch.queue_max_bytes as f64 / 1e3,
        s.switch.pfc_pause_frames
    );
    println!(
        "  r (NP)   saw {} CE-marked packets, sent {} CNPs (at most one per QP per {} us)",
        c.np_ecn_marked_roce_packets, c.np_cnp_sent, u.cnp_interval_us
    );
    println!(
        "  senders  handled {} CNPs: {} {} rate cuts, {} increases; lowest rate {:.3} Gbit/s (from {:.1})",
        c.rp_cnp_handled,
        s.cc.rate_cuts,
        s.cc.name,
        s.cc.rate_increases,
        s.cc.min_rate_gbps,
        s.cc.line_rate_gbps
    );
    print!("{}", story(series, &s.flows, 60));
    println!();
    println!("Counters (mlx5 / rxe names, all hosts)");
    let rows = [
        ("np_ecn_marked_roce_packets", c.np_ecn_marked_roce_packets),
        ("np_cnp_sent", c.np_cnp_sent),
        ("rp_cnp_handled", c.rp_cnp_handled),
        ("out_of_sequence", c.out_of_sequence),
        ("packet_seq_err", c.packet_seq_err),
        ("local_ack_timeout_err", c.local_ack_timeout_err),
        ("duplicate_request", c.duplicate_request),
        ("implied_nak_seq_err", c.implied_nak_seq_err),
        ("rnr_nak_retry_err", c.rnr_nak_retry_err),
        (
            "req_transport_retries_exceeded",
            c.req_transport_retries_exceeded,
        ),
        ("req_remote_access_errors", c.req_remote_access_errors),
        ("completer_retry_err", c.completer_retry_err),
        ("rx_write_requests", c.rx_write_requests),
        ("rx_read_requests", c.rx_read_requests),
        ("rx_icrc_errors", c.rx_icrc_errors),
    ];
    for pair in rows.chunks(2) {
        let cells: Vec<String> = pair
            .iter()
            .map(|(n, v)| format!("  {n:<32}{v:>10}"))
            .collect();
        println!("{}", cells.join("    "));
    }
    println!();
    if s.verified {
        let msgs: u64 = s.flows.iter().map(|f| f.messages).sum();
        println!(
            "Verified: all {msgs} messages of {} flows arrived byte for byte; no transport errors.",
            s.flows.len()
        );
    }
    if let Some(p) = &files.pcap {
        println!(
            "Capture: {} (check it with `roce pcap check {}`)",
            p.display(),
            p.display()
        );
    }
    if let Some(d) = &files.out {
        println!(
            "Time series: {}/flows.csv queue.csv cc.csv, plot {}/demo.svg",
            d.display(),
            d.display()
        );
    }
}
