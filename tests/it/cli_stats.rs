//! The counter table every command prints and `roce stats` reading a command's `--json` back:
//! exact layout, zero rows hidden, `rdma statistic` lines, per-port counters from an endpoint.

use crate::support::cli_output;

use cli_output::{roce, scratch_dir};
use roce::stats::{table, Column, PortStats, QpStats, StatsReport};
use roce_proto::counters::{EndpointCounters, QpCounters, RdmaCounters};

fn report() -> StatsReport {
    let r = RdmaCounters {
        np_cnp_sent: 7,
        np_ecn_marked_roce_packets: 12,
        ..RdmaCounters::default()
    };
    let s = RdmaCounters {
        rp_cnp_handled: 7,
        ..RdmaCounters::default()
    };
    StatsReport {
        ports: vec![
            PortStats {
                link: "r/1".into(),
                counters: r,
            },
            PortStats {
                link: "s1/1".into(),
                counters: s,
            },
        ],
        qps: vec![QpStats {
            link: "s1/1".into(),
            lqpn: 17,
            rqpn: 18,
            counters: s,
        }],
    }
}

#[test]
fn port_table_shows_nonzero_counters_per_link_and_a_total() {
    let all_names = RdmaCounters::default().pairs().len();
    let want = format!(
        "Counters per port (mlx5 / rxe names)
  counter                     r/1  s1/1  total
  np_ecn_marked_roce_packets   12     0     12
  np_cnp_sent                   7     0      7
  rp_cnp_handled                0     7      7
  ({} more counters are 0 everywhere)
",
        all_names - 3
    );
    assert_eq!(report().port_table(false), want);
    assert_eq!(report().port_table(true).lines().count(), all_names + 2);
}

#[test]
fn rdma_lines_name_every_counter_like_rdma_statistic() {
    let lines = report().rdma_lines();
    let first = lines.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(
            "link r/1 sent_pkts 0 rcvd_pkts 0 np_ecn_marked_roce_packets 12 np_cnp_sent 7 "
        ),
        "{first}"
    );
    let qp = lines.lines().nth(2).unwrap_or_default();
    assert!(
        qp.starts_with("link s1/1 lqpn 17 rqpn 18 qp-type RC sent_pkts 0 "),
        "{qp}"
    );
    assert_eq!(lines.lines().count(), 3);
}

#[test]
fn wide_tables_wrap_into_blocks_of_six_columns() {
    let cols: Vec<Column> = (0..8)
        .map(|i| Column {
            heading: format!("q{i}"),
            cells: vec![("x".into(), i.to_string())],
        })
        .collect();
    let t = table(&cols, false);
    let headers: Vec<&str> = t
        .lines()
        .filter(|l| l.trim_start().starts_with("counter"))
        .collect();
    assert_eq!(
        headers,
        ["  counter  q0  q1  q2  q3  q4  q5", "  counter  q6  q7"]
    );
}

#[test]
fn port_counters_take_the_marks_and_drop_counts_of_the_endpoint() {
    let mut c = EndpointCounters {
        tx_frames: 5,
        rx_frames: 9,
        cnps_sent: 2,
        ..Default::default()
    };
    c.drops.bad_icrc = 1;
    c.drops.unknown_qp = 3;
    c.qp = QpCounters {
        rx_dropped: 1,
        ecn_ce_received: 11,
        packet_seq_err: 4,
        rp_cnp_handled: 6,
        ..Default::default()
    };
    let np = roce_proto::ecn::NpCounters {
        np_ecn_marked_roce_packets: 8,
        np_cnp_sent: 2,
    };
    let p = RdmaCounters::of_port(&c, &np);
    assert_eq!(
        (
            p.sent_pkts,
            p.rcvd_pkts,
            p.np_cnp_sent,
            p.np_ecn_marked_roce_packets
        ),
        // 11 CE-marked packets reached QPs, 8 of them requests the notification point saw.
        (5, 9, 2, 11)
    );
    assert_eq!(
        (
            p.rx_icrc_errors,
            p.rx_dropped,
            p.packet_seq_err,
            p.rp_cnp_handled
        ),
        (1, 4, 4, 6)
    );
}

#[test]
fn roce_stats_prints_the_stats_key_of_a_json_file() {
    let dir = scratch_dir("cli-stats");
    let file = dir.join("run.json");
    let json = serde_json::json!({ "verified": true, "stats": report() });
    std::fs::write(&file, json.to_string()).expect("write");
    let (code, out, err) = roce(&["stats", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, report().table(false));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn roce_stats_of_a_sim_summary_shows_pfc_by_port_and_priority() {
    let dir = scratch_dir("cli-stats-pfc");
    let file = dir.join("incast.json");
    let (code, json, err) = roce(&[
        "sim",
        "run",
        "scenarios/incast.toml",
        "--set",
        "duration_us=300",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(&file, &json).expect("write");
    let summary: serde_json::Value = serde_json::from_str(&json).expect("json");
    let pfc = summary["pfc"].as_array().expect("a pfc array");
    // The switch's port to the receiver sent every pause; the 16 senders' NICs received them.
    let sent: u64 = pfc.iter().map(|p| p["tx_pause"].as_u64().unwrap()).sum();
    assert!(sent > 0);
    assert_eq!(sent, summary["pfc_pause_frames"].as_u64().unwrap());
    let (code, out, err) = roce(&["stats", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let table = out
        .split("PFC by port and priority")
        .nth(1)
        .unwrap_or_else(|| panic!("no PFC table:\n{out}"));
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), pfc.len(), "{out}");
    // A row per entry, in the JSON's order: port, priority, sent, received.
    for (row, p) in rows.iter().zip(pfc) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let port = format!("{}:{}", p["node"].as_str().unwrap(), p["port"]);
        let want = [
            port,
            "3".into(),
            p["tx_pause"].to_string(),
            p["rx_pause"].to_string(),
        ];
        assert_eq!(cells[..4], want, "{out}");
    }
    let (code, lines, err) = roce(&["stats", "--rdma", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let words: Vec<&str> = lines.split_whitespace().collect();
    let counted: u64 = words
        .windows(2)
        .filter(|w| w[0] == "tx_prio3_pause")
        .map(|w| w[1].parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, sent, "{lines}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn roce_stats_of_a_sim_summary_shows_what_the_pfc_watchdog_did() {
    let dir = scratch_dir("cli-stats-pfcwd");
    let file = dir.join("storm.json");
    let (code, json, err) = roce(&["sim", "run", "scenarios/pfc-storm.toml", "--json"]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(&file, &json).expect("write");
    let summary: serde_json::Value = serde_json::from_str(&json).expect("json");
    let rows = summary["pfc_watchdog"].as_array().expect("watchdog rows");
    assert_eq!(rows.len(), 1, "{json}");
    let (port, dropped) = (
        format!("{}:{}", rows[0]["node"].as_str().unwrap(), rows[0]["port"]),
        rows[0]["dropped"].as_u64().unwrap(),
    );
    assert!(dropped > 0);
    let (code, out, err) = roce(&["stats", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .split("pfc watchdog by port and priority")
        .nth(1)
        .and_then(|t| t.lines().nth(1))
        .unwrap_or_else(|| panic!("no watchdog table:\n{out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[0], port, "{out}");
    assert_eq!(
        cells.last().copied(),
        Some(dropped.to_string().as_str()),
        "{out}"
    );
    let (code, lines, err) = roce(&["stats", "--rdma", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let want = format!("prio3_storm_detected 1 prio3_storm_restored 1 prio3_pfcwd_drop {dropped}");
    assert!(lines.contains(&want), "{lines}");
    let _ = std::fs::remove_dir_all(&dir);
}
