//! `roce stats`: the counters of a finished run as `rdma statistic` shows a device's. roce has no
//! daemon to ask, so it reads what a command left: the `--json` output of any roce command (a
//! file, or stdin in a pipe: `roce demo --json | roce stats`), and prints its per-port and per-QP
//! counters (the `stats` key) as one table under the mlx5/rxe names, or as `rdma statistic` lines.
//! Output without a `stats` key still shows every object whose key names counters (or, without
//! those, the document's top-level numbers).
//!
//! Also the helpers other commands call to print the same table (`--stats`).

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use serde_json::Value;

use roce::stats::{table, Column, StatsReport};
use roce_fabric::experiment::pfc_pauses::PfcPause;
use roce_fabric::experiment::pfc_storms::{self, DeadlockReport, WatchdogRow};

mod watch;

/// Options of `roce stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Show a running command's counters live instead: its `--metrics` address (127.0.0.1:9464)
    /// or its DPDK telemetry socket (/var/run/dpdk/rte/dpdk_telemetry.v2).
    #[arg(long, value_name = "SOURCE", conflicts_with = "file")]
    watch: Option<String>,
    /// Refresh interval of --watch (e.g. 1s, 500ms).
    #[arg(long, default_value = "1s", requires = "watch")]
    interval: String,
    /// Stop --watch after this many tables (0: until interrupted).
    #[arg(long, default_value_t = 0, requires = "watch")]
    count: u64,
    /// A roce command's `--json` output (`-` or nothing: stdin, when it is a pipe or file).
    file: Option<PathBuf>,
    /// Show counters that are 0 everywhere too.
    #[arg(long)]
    all: bool,
    /// Print `rdma statistic show` / `rdma statistic qp show` lines instead of the table.
    #[arg(long)]
    rdma: bool,
}

/// Runs `roce stats`, writing to `out`.
pub fn run(args: StatsArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if let Some(w) = &args.watch {
        let interval = crate::cli::progress::parse_interval(&args.interval)
            .map_err(|e| anyhow::anyhow!("--interval {e}"))?;
        return watch::watch(
            out,
            &watch::Source::parse(w)?,
            interval,
            args.count,
            args.all,
        );
    }
    let (name, text) = match args.file.as_deref() {
        Some(p) if p != Path::new("-") => (
            p.display().to_string(),
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?,
        ),
        _ => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                bail!("roce stats reads a command's --json output: `roce stats FILE` or `roce demo --json | roce stats`");
            }
            let mut s = String::new();
            stdin
                .lock()
                .read_to_string(&mut s)
                .context("cannot read stdin")?;
            ("stdin".to_owned(), s)
        }
    };
    let found = Found::from_json(&text).with_context(|| format!("{name} is not JSON"))?;
    let body = match (&found, args.rdma) {
        (Found::Report(r), true) => r.rdma_lines(),
        (Found::Report(r), false) => r.table(args.all),
        (Found::Sections(cols, pfc), true) => {
            rdma_sections(cols) + &pfc_rdma_lines(&pfc.pauses) + &watchdog_rdma_lines(pfc)
        }
        (Found::Sections(cols, pfc), false) => format!(
            "Counters (by JSON key)\n{}{}{}",
            table(cols, args.all),
            pfc_table(&pfc.pauses),
            pfc_storms::lines(&pfc.watchdog, pfc.deadlock.as_ref())
        ),
        (Found::Nothing, _) => bail!(
            "{name} has no counters (expected the --json output of a roce command, e.g. roce demo --json)"
        ),
    };
    out.write_all(body.as_bytes())?;
    Ok(())
}

/// What a JSON document holds.
#[derive(Debug)]
enum Found {
    /// `stats` keys (merged when several documents have one).
    Report(StatsReport),
    /// Objects under counter-like keys, one column per JSON path, and a `roce sim` summary's
    /// PFC rows.
    Sections(Vec<Column>, SimPfc),
    /// Neither.
    Nothing,
}

impl Found {
    /// Reads one JSON document or several (JSON lines, concatenated documents).
    fn from_json(text: &str) -> Result<Found, serde_json::Error> {
        let mut report: Option<StatsReport> = None;
        let mut cols = Vec::new();
        let mut pfc = SimPfc::default();
        for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            let v = v?;
            if let Some(r) = v
                .get("stats")
                .and_then(|s| serde_json::from_value::<StatsReport>(s.clone()).ok())
                .filter(|r| !r.ports.is_empty() || !r.qps.is_empty())
            {
                let into = report.get_or_insert_with(StatsReport::default);
                into.ports.extend(r.ports);
                into.qps.extend(r.qps);
            } else {
                let before = cols.len();
                pfc.extend(&v);
                sections(&v, "", &mut cols);
                if cols.len() == before {
                    // No counter objects: the document's own top-level numbers (a `roce sim`
                    // summary, a `pcap check` summary line).
                    let mut cells = Vec::new();
                    if let Value::Object(map) = &v {
                        for (k, child) in map {
                            if let Value::Number(n) = child {
                                cells.push((k.clone(), number(n)));
                            }
                        }
                    }
                    if !cells.is_empty() {
                        let heading = v.get("name").and_then(Value::as_str).unwrap_or("summary");
                        cols.push(Column {
                            heading: heading.to_owned(),
                            cells,
                        });
                    }
                }
            }
        }
        Ok(match report {
            Some(r) => Found::Report(r),
            None if !cols.is_empty() => Found::Sections(cols, pfc),
            None => Found::Nothing,
        })
    }
}

/// A `roce sim` summary's PFC: pauses by port and priority (`pfc`), what the switches' PFC
/// watchdogs did (`pfc_watchdog`) and the deadlock the run saw (`pfc_deadlock`).
#[derive(Debug, Default)]
struct SimPfc {
    pauses: Vec<PfcPause>,
    watchdog: Vec<WatchdogRow>,
    deadlock: Option<DeadlockReport>,
}

impl SimPfc {
    /// Adds what document `v` holds (nothing when it is no `roce sim` summary).
    fn extend(&mut self, v: &Value) {
        fn key<T: serde::de::DeserializeOwned>(v: &Value, k: &str) -> Option<T> {
            serde_json::from_value(v.get(k)?.clone()).ok()
        }
        self.pauses
            .extend(key::<Vec<PfcPause>>(v, "pfc").unwrap_or_default());
        self.watchdog
            .extend(key::<Vec<WatchdogRow>>(v, "pfc_watchdog").unwrap_or_default());
        if let Some(d) = key::<DeadlockReport>(v, "pfc_deadlock") {
            self.deadlock.get_or_insert(d);
        }
    }
}

/// The PFC rows as a table under mlx5's per-priority names.
fn pfc_table(rows: &[PfcPause]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "PFC by port and priority (mlx5 tx_prio<p>_pause, rx_prio<p>_pause, rx_prio<p>_pause_duration)\n",
    );
    s += &format!(
        "  {:<16} {:>4} {:>10} {:>10} {:>22}\n",
        "port", "prio", "tx_pause", "rx_pause", "rx_pause_duration_us"
    );
    for r in rows {
        s += &format!(
            "  {:<16} {:>4} {:>10} {:>10} {:>22.1}\n",
            format!("{}:{}", r.node, r.port),
            r.priority,
            r.tx_pause,
            r.rx_pause,
            r.rx_pause_duration_us
        );
    }
    s
}

/// The PFC rows as `rdma statistic`-style lines, counters named as mlx5 names them.
fn pfc_rdma_lines(rows: &[PfcPause]) -> String {
    rows.iter()
        .map(|r| {
            let p = r.priority;
            format!(
                "link {}/{} tx_prio{p}_pause {} rx_prio{p}_pause {} rx_prio{p}_pause_duration {:.0}\n",
                r.node, r.port, r.tx_pause, r.rx_pause, r.rx_pause_duration_us
            )
        })
        .collect()
}

/// The watchdog rows as `rdma statistic`-style lines, under SONiC's `pfcwd show stats` names.
fn watchdog_rdma_lines(pfc: &SimPfc) -> String {
    pfc.watchdog
        .iter()
        .map(|r| {
            let p = r.priority;
            format!(
                "link {}/{} prio{p}_storm_detected {} prio{p}_storm_restored {} prio{p}_pfcwd_drop {}\n",
                r.node, r.port, r.storms, r.restored, r.dropped
            )
        })
        .collect()
}

/// A key that holds counters: `counters`, `counters_a`, `np_counters`, `switch`, `faults_*`.
fn counter_key(k: &str) -> bool {
    k.contains("counters") || k == "switch" || k.starts_with("faults")
}

/// Collects a column for every object under a counter-like key (nested objects flattened into
/// dotted names, in key order), searching the whole document.
fn sections(v: &Value, path: &str, out: &mut Vec<Column>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if counter_key(k) && child.is_object() {
                    let mut cells = Vec::new();
                    flatten(child, "", &mut cells);
                    if !cells.is_empty() {
                        out.push(Column { heading: p, cells });
                    }
                } else {
                    sections(child, &p, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                sections(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Numeric leaves of `v` as `(dotted.name, value)`.
fn flatten(v: &Value, prefix: &str, out: &mut Vec<(String, String)>) {
    if let Value::Object(map) = v {
        for (k, child) in map {
            let name = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match child {
                Value::Number(n) => out.push((name, number(n))),
                Value::Object(_) => flatten(child, &name, out),
                _ => {}
            }
        }
    }
}

fn number(n: &serde_json::Number) -> String {
    match (n.as_u64(), n.as_i64(), n.as_f64()) {
        (Some(u), _, _) => u.to_string(),
        (None, Some(i), _) => i.to_string(),
        (None, None, Some(0.0)) => "0".to_owned(),
        (None, None, Some(f)) => format!("{f:.3}"),
        _ => n.to_string(),
    }
}

fn rdma_sections(cols: &[Column]) -> String {
    cols.iter()
        .map(|c| {
            let pairs: String = c.cells.iter().map(|(n, v)| format!(" {n} {v}")).collect();
            format!("link {}{pairs}\n", c.heading)
        })
        .collect()
}

/// Prints `report` as `--stats` does at the end of a command: a blank line, then the per-port
/// and per-QP tables (`ports: false` leaves out the per-port one, for a report that showed it).
#[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
pub fn print_report(
    out: &mut dyn Write,
    report: &StatsReport,
    ports: bool,
    all: bool,
) -> std::io::Result<()> {
    writeln!(out)?;
    let text = match ports {
        true => report.table(all),
        false => report.qp_table(all),
    };
    out.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_without_a_stats_key_shows_each_counter_object_as_a_column() {
        let text = r#"{"verified":true,"counters_a":{"tx_frames":5,"qp":{"packet_seq_err":2}},
            "flows":[{"goodput_gbps":1.5}],"switch":{"ecn_marked":3,"queue_mean_bytes":12.25}}"#;
        let Ok(Found::Sections(cols, _)) = Found::from_json(text) else {
            panic!("sections expected");
        };
        let got: Vec<(&str, Vec<(&str, &str)>)> = cols
            .iter()
            .map(|c| {
                (
                    c.heading.as_str(),
                    c.cells
                        .iter()
                        .map(|(n, v)| (n.as_str(), v.as_str()))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "counters_a",
                    vec![("qp.packet_seq_err", "2"), ("tx_frames", "5")]
                ),
                (
                    "switch",
                    vec![("ecn_marked", "3"), ("queue_mean_bytes", "12.250")]
                ),
            ]
        );
    }

    #[test]
    fn stats_keys_of_json_lines_are_merged() {
        let one = r#"{"stats":{"ports":[{"link":"a/1","counters":{"np_cnp_sent":4}}],"qps":[]}}"#;
        let two = r#"{"stats":{"ports":[{"link":"b/1","counters":{"rp_cnp_handled":4}}]}}"#;
        let Ok(Found::Report(r)) = Found::from_json(&format!("{one}\n{two}\n")) else {
            panic!("a report expected");
        };
        let links: Vec<&str> = r.ports.iter().map(|p| p.link.as_str()).collect();
        assert_eq!(links, ["a/1", "b/1"]);
        assert_eq!((r.total().np_cnp_sent, r.total().rp_cnp_handled), (4, 4));
    }

    #[test]
    fn top_level_numbers_stand_in_when_no_object_holds_counters() {
        let Ok(Found::Sections(cols, _)) =
            Found::from_json(r#"{"name":"incast","cnp_sent":8,"flows":[{"bytes":1}]}"#)
        else {
            panic!("sections expected");
        };
        assert_eq!(
            cols,
            [Column {
                heading: "incast".into(),
                cells: vec![("cnp_sent".into(), "8".into())],
            }]
        );
    }

    #[test]
    fn json_with_no_numbers_is_nothing() {
        assert!(matches!(
            Found::from_json(r#"{"summary":true,"name":"x"}"#),
            Ok(Found::Nothing)
        ));
        assert!(Found::from_json("{nope").is_err());
    }
}
