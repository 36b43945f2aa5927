//! The simulator's telemetry as a validation plan reads it: per port and priority (queue depth,
//! drops by reason, PFC pauses and paused time, ECN marks), per host (CNPs, retransmissions,
//! timeouts), the `ports.csv`/`hosts.csv` time series, and `--pcap` of one simulated port.

use crate::support::cli_output;

use std::collections::BTreeMap;
use std::path::PathBuf;

use roce::pcap::CaptureReader;
use roce::report::telemetry::{buffers_csv, hosts_csv, ports_csv, ports_header};
use roce_fabric::experiment::builtin::{Builtin, BuiltinKind};
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::record::telemetry::{HostCounters, PortTelemetry};
use roce_proto::wire::parse_frame;

fn incast(pfc: bool) -> Scenario {
    Builtin {
        senders: Some(4),
        duration_us: Some(300.0),
        pfc,
        ..Builtin::default()
    }
    .scenario(BuiltinKind::Incast)
}

/// One transport counter of every host, added up.
fn host_total(s: &RunSummary, counter: fn(&HostCounters) -> u64) -> u64 {
    s.hosts.iter().map(|h| counter(&h.counters)).sum()
}

fn port<'a>(s: &'a RunSummary, node: &str, port: u16, prio: u8) -> &'a PortTelemetry {
    s.ports
        .iter()
        .find(|p| p.node == node && p.port == port && p.priority == prio)
        .unwrap_or_else(|| panic!("no row for {node}:{port} prio {prio}"))
}

#[test]
fn incast_with_pfc_shows_pauses_sent_toward_senders_and_received_by_them() {
    let (s, _) = incast(true).run(|_| {}).expect("runs");
    // Star of 5 hosts: sw0 port i faces host hi; host h4 (port 4) is the receiver.
    for i in 0..4u16 {
        let sw = port(&s, "sw0", i, 3);
        let host = port(&s, &format!("h{i}"), 0, 3);
        assert!(sw.tx_pause > 0, "sw0:{i} sent no pause");
        // Every pause sw0:i sent reached hi, but for one still on the wire when the run ends
        // (sw0:3 with seed 1: 29 sent, 28 received).
        assert!(
            matches!(sw.tx_pause.checked_sub(host.rx_pause), Some(0 | 1)),
            "every pause sw0:{i} sent reached h{i}: {} sent, {} received",
            sw.tx_pause,
            host.rx_pause
        );
        assert!(host.rx_pause_duration_us > 0.0);
        assert_eq!(host.tx_pause, 0, "hosts do not pause the switch");
    }
    let sent: u64 = s.ports.iter().map(|p| p.tx_pause).sum();
    assert_eq!(sent, s.pfc_pause_frames);
    let paused: f64 = s.hosts.iter().map(|h| h.rx_pause_duration_us).sum();
    assert!(
        (paused - s.host_paused_us).abs() < 1e-6,
        "{paused} vs {}",
        s.host_paused_us
    );
    assert_eq!(
        s.hosts.iter().map(|h| h.rx_pause).sum::<u64>(),
        s.host_pause_frames
    );
    // Lossless: nothing dropped anywhere, for any reason.
    assert!(s
        .ports
        .iter()
        .all(|p| p.drops == 0 && p.dropped.total() == 0));
    assert_eq!(s.drops, 0);
}

#[test]
fn incast_bottleneck_queue_and_ecn_marks_match_the_cnps_hosts_count() {
    let (s, _) = incast(true).run(|_| {}).expect("runs");
    let b = port(&s, "sw0", 4, 3);
    assert!(b.queue_mean_bytes > 100_000.0, "{}", b.queue_mean_bytes);
    assert!(b.queue_max_bytes >= b.queue_p99_bytes);
    assert!(b.queue_p99_bytes as f64 >= b.queue_mean_bytes);
    for p in &s.ports {
        assert!(p.queue_max_bytes >= p.queue_p99_bytes, "{p:?}");
        assert!(p.queue_p99_bytes as f64 >= p.queue_mean_bytes, "{p:?}");
    }
    // Only the bottleneck egress marks, and the summary's total is its count.
    assert_eq!(b.ecn_marked, s.ecn_marked);
    assert!(b.ecn_marked > 0);
    let rx = s.hosts.iter().find(|h| h.host == "h4").expect("receiver");
    let got = rx.counters.np_ecn_marked_roce_packets;
    // Marked packets still queued or on the wire at the end have not arrived yet: at most
    // what the queue held (1082-byte frames) plus a few on the wire.
    assert!(got <= b.ecn_marked, "{got} > {}", b.ecn_marked);
    assert!(b.ecn_marked - got <= b.queue_max_bytes / 1082 + 10);
    // The notification point answers marks with CNPs, one per QP per interval.
    let np = host_total(&s, |c| c.np_cnp_sent);
    assert_eq!(rx.counters.np_cnp_sent, np, "only the receiver sends CNPs");
    assert!(np > 0 && np <= got);
    assert_eq!(np, s.cnp_sent);
    assert_eq!(host_total(&s, |c| c.rp_cnp_handled), s.cnp_handled);
    assert_eq!(
        host_total(&s, |c| c.retransmitted_packets),
        s.recovery.retransmitted
    );
}

#[test]
fn lossy_incast_counts_queue_full_drops_and_the_retransmissions_they_cause() {
    let mut sc = incast(false);
    sc.switch.queue_limit_bytes = 100_000;
    let (s, _) = sc.run(|_| {}).expect("runs");
    let b = port(&s, "sw0", 4, 3);
    assert!(b.drops > 0);
    assert_eq!(b.dropped.queue_full, b.drops, "{:?}", b.dropped);
    assert_eq!(s.ports.iter().map(|p| p.drops).sum::<u64>(), s.drops);
    assert!(b.queue_max_bytes <= 100_000);
    assert_eq!(s.pfc_pause_frames, 0);
    let retx = host_total(&s, |c| c.retransmitted_packets);
    assert_eq!(retx, s.recovery.retransmitted);
    assert!(retx > 0);
    assert_eq!(
        host_total(&s, |c| c.local_ack_timeout_err),
        s.recovery.timeouts
    );
}

#[test]
fn a_failed_cable_drops_as_link_down() {
    let sc = Builtin {
        duration_us: Some(1_500.0),
        ..Builtin::default()
    }
    .scenario(BuiltinKind::LinkFailure);
    let (s, _) = sc.run(|_| {}).expect("runs");
    let down: u64 = s.ports.iter().map(|p| p.dropped.link_down).sum();
    assert!(down > 0);
    assert_eq!(down, s.drops, "every drop of this run is the dead cable's");
}

/// A CSV as rows of named cells.
fn parse_csv(text: &str) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("header")
        .split(',')
        .map(str::to_owned)
        .collect();
    let rows = lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{l}");
            header
                .iter()
                .cloned()
                .zip(cells.into_iter().map(str::to_owned))
                .collect()
        })
        .collect();
    (header, rows)
}

/// (node, port, priority) of a `ports.csv` row.
type Series = (String, String, String);

fn num(row: &BTreeMap<String, String>, col: &str) -> f64 {
    row.get(col)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{col} is not a number in {row:?}"))
}

#[test]
fn ports_and_hosts_csv_parse_and_their_bins_sum_to_the_summary() {
    let (s, built) = incast(true).run(|_| {}).expect("runs");
    let t = built
        .fabric
        .recorder()
        .and_then(|r| r.telemetry.as_ref())
        .expect("telemetry");
    assert_eq!(t.bins.len(), 12, "300 us in the default twelve bins");
    let (header, rows) = parse_csv(&ports_csv(t));
    assert_eq!(header.join(","), ports_header(false));
    assert_eq!(
        rows.len(),
        12 * s.ports.len(),
        "one row per active series and bin"
    );
    let mut last_t = 0.0;
    // (node, port, priority) -> sums of tx_pause, rx_pause, ecn_marked, rx_pause_duration_us.
    let mut sums: BTreeMap<Series, [f64; 4]> = BTreeMap::new();
    for r in &rows {
        let t = num(r, "time_us");
        assert!(t >= last_t);
        last_t = t;
        for col in &header[2..] {
            num(r, col);
        }
        assert!(num(r, "queue_max_bytes") >= num(r, "queue_mean_bytes"));
        let key = (r["node"].clone(), r["port"].clone(), r["priority"].clone());
        let e = sums.entry(key).or_default();
        let cols = ["tx_pause", "rx_pause", "ecn_marked", "rx_pause_duration_us"];
        for (sum, col) in e.iter_mut().zip(cols) {
            *sum += num(r, col);
        }
    }
    assert_eq!(last_t, 300.0);
    for p in &s.ports {
        let key = (p.node.clone(), p.port.to_string(), p.priority.to_string());
        let [tx, rx, ecn, dur] = sums[&key];
        assert_eq!(
            (tx, rx, ecn),
            (p.tx_pause as f64, p.rx_pause as f64, p.ecn_marked as f64)
        );
        assert!((dur - p.rx_pause_duration_us).abs() < 0.01, "{key:?}");
    }
    let (_, hosts) = parse_csv(&hosts_csv(t));
    assert_eq!(hosts.len(), 12 * 5);
    for h in &s.hosts {
        let mine = hosts.iter().filter(|r| r["host"] == h.host);
        let cnps: f64 = mine.clone().map(|r| num(r, "np_cnp_sent")).sum();
        let pauses: f64 = mine.map(|r| num(r, "rx_pause")).sum();
        assert_eq!(cnps, h.counters.np_cnp_sent as f64);
        assert_eq!(pauses, h.rx_pause as f64);
    }
    // buffers.csv: per switch and bin, the mean and largest sampled occupancy; the bins' means
    // weighted by their samples are the summary's mean (twelve equal bins here).
    let (header, rows) = parse_csv(&buffers_csv(t));
    assert_eq!(
        header.join(","),
        "time_us,node,buffer_bytes,mean_bytes,max_bytes"
    );
    assert_eq!(rows.len(), 12 * s.buffers.len());
    let b = &s.buffers[0];
    let mean: f64 = rows.iter().map(|r| num(r, "mean_bytes")).sum::<f64>() / 12.0;
    assert!(
        (mean - b.mean_bytes).abs() <= 0.01 * b.mean_bytes,
        "{mean} against {b:?}"
    );
    let max = rows.iter().map(|r| num(r, "max_bytes")).fold(0.0, f64::max);
    assert_eq!(max, b.max_bytes as f64);
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("roce-sim-telemetry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

#[test]
fn pcap_of_a_port_holds_its_frames_both_ways_with_valid_icrcs_in_time_order() {
    let pcap = scratch("h4.pcap");
    let out = scratch("out");
    let (code, _, err) = cli_output::roce(&[
        "sim",
        "incast",
        "--senders",
        "3",
        "--duration",
        "100us",
        "--pcap",
        pcap.to_str().expect("utf-8"),
        "--pcap-port",
        "h3",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{err}");
    for f in ["ports.csv", "hosts.csv", "buffers.csv", "summary.json"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let frames: Vec<_> = CaptureReader::open(&pcap)
        .expect("a capture")
        .collect::<Result<_, _>>()
        .expect("readable");
    assert!(frames.len() > 100, "{}", frames.len());
    let receiver: std::net::IpAddr = "10.0.0.4".parse().expect("ip");
    let (mut to, mut from) = (0, 0);
    let mut last = std::time::Duration::ZERO;
    for f in &frames {
        assert!(f.timestamp >= last);
        last = f.timestamp;
        // Hosts are never paused by the receiver's NIC, so every frame on its port is RoCE.
        let p = parse_frame(&f.data)
            .unwrap_or_else(|e| panic!("frame at {:?} is not valid RoCE: {e}", f.timestamp));
        let (src, dst) = (p.repr.ip.src(), p.repr.ip.dst());
        let way = f.comment.as_deref();
        if dst == receiver {
            assert_eq!(
                way,
                Some("received"),
                "h3 is the receiver: data arrives at its NIC"
            );
            to += 1;
        } else {
            assert_eq!(way, Some("sent"), "its ACKs and CNPs leave it");
            assert_eq!(src, receiver, "a frame of another port");
            from += 1;
        }
    }
    assert!(to > from && from > 0, "{to} to, {from} from the receiver");
    assert!(last <= std::time::Duration::from_micros(100));
    // Nanosecond timestamps: not every frame sits on a microsecond boundary.
    assert!(frames
        .iter()
        .any(|f| f.timestamp.subsec_nanos() % 1000 != 0));
    let (code, check, _) = cli_output::roce(&["pcap", "check", pcap.to_str().expect("utf-8")]);
    assert_eq!(code, 0);
    assert!(
        check.contains(&format!("{} frames", frames.len())),
        "{check}"
    );
    assert!(check.contains("0 ICRC bad"), "{check}");
}

#[test]
fn a_bad_pcap_port_is_one_clear_line() {
    let pcap = scratch("bad.pcap");
    let pcap = pcap.to_str().expect("utf-8");
    let run = |port: &str| {
        let (code, _, err) = cli_output::roce(&[
            "sim",
            "incast",
            "--senders",
            "2",
            "--duration",
            "20us",
            "--pcap",
            pcap,
            "--pcap-port",
            port,
        ]);
        (code, err)
    };
    let (code, err) = run("sw9:1");
    assert_ne!(code, 0);
    assert!(
        err.contains("no node \"sw9\": switches are sw0; hosts are h0, h1, h2"),
        "{err}"
    );
    let (_, err) = run("sw0:7");
    assert!(
        err.contains("sw0 has no port 7: its ports are 0..3"),
        "{err}"
    );
    let (_, err) = run("sw0");
    assert!(
        err.contains("sw0 is a switch: say which port, as sw0:PORT"),
        "{err}"
    );
    // By index works as well as by name.
    let (code, err) = run("switch0:2");
    assert_eq!(code, 0, "{err}");
}

#[test]
fn ports_csv_has_the_pfc_watchdog_columns_when_a_switch_runs_one() {
    let path = format!("{}/scenarios/pfc-storm.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).expect("scenario");
    let s = Scenario::from_toml(&text).expect("parses");
    let (sum, built) = s.run(|_| {}).expect("runs");
    let t = built
        .fabric
        .recorder()
        .and_then(|r| r.telemetry.as_ref())
        .expect("telemetry");
    assert!(t.watchdog());
    let (header, rows) = parse_csv(&ports_csv(t));
    assert_eq!(header.join(","), ports_header(true));
    assert!(!ports_header(false).contains("pfc_wd"));
    // The stormed queue's bins add up to the summary's row.
    let sw0_3 = rows
        .iter()
        .filter(|r| r["node"] == "sw0" && r["port"] == "3");
    let sw0_3: Vec<_> = sw0_3.filter(|r| r["priority"] == "3").collect();
    let sum_of = |col: &str| sw0_3.iter().map(|r| num(r, col)).sum::<f64>();
    let row = &sum.pfc_watchdog[0];
    assert_eq!(sum_of("pfc_wd_storms"), row.storms as f64);
    assert_eq!(sum_of("pfc_wd_restored"), row.restored as f64);
    assert_eq!(sum_of("drop_pfc_watchdog"), row.dropped as f64);
}
