//! Counter reports: per port and per QP under the mlx5 / rxe names (`rdma statistic` style), the
//! `stats` key of every command's `--json` output, and the table every command prints. The
//! counters themselves are counted by the transport ([`roce_proto::counters`]).

use roce_proto::counters::RdmaCounters;
use roce_proto::endpoint::Endpoint;
use serde::Serialize;

/// One port's counters (`rdma statistic show link NAME/1`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PortStats {
    /// `NAME/PORT`, the way `rdma` names a link (`r/1`).
    pub link: String,
    /// Its counters.
    pub counters: RdmaCounters,
}

/// One QP's counters (`rdma statistic qp show`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct QpStats {
    /// The port the QP lives on (`r/1`).
    pub link: String,
    /// Local QP number.
    pub lqpn: u32,
    /// The peer's QP number.
    pub rqpn: u32,
    /// Its counters (the notification point counts CNPs per port, so `np_cnp_sent` is 0 here).
    pub counters: RdmaCounters,
}

/// Counters per port and per QP: the `stats` key of every command's `--json` output, which
/// `roce stats` reads back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct StatsReport {
    /// Per port.
    pub ports: Vec<PortStats>,
    /// Per QP.
    pub qps: Vec<QpStats>,
}

impl StatsReport {
    /// Adds the port `name/1` of endpoint `ep` and those of its QPs numbered in `qpns` that exist.
    pub fn add_endpoint(&mut self, name: &str, ep: &Endpoint, qpns: impl IntoIterator<Item = u32>) {
        let link = format!("{name}/1");
        for qpn in qpns {
            if let Some(qp) = ep.qp(qpn) {
                self.qps.push(QpStats {
                    link: link.clone(),
                    lqpn: qpn,
                    rqpn: qp.dest_qpn(),
                    counters: RdmaCounters::of_qp(qp.counters()),
                });
            }
        }
        self.ports.push(PortStats {
            link,
            counters: ep.rdma_counters(),
        });
    }

    /// The sum over the ports.
    pub fn total(&self) -> RdmaCounters {
        let mut t = RdmaCounters::default();
        for p in &self.ports {
            t.accumulate(&p.counters);
        }
        t
    }

    /// The per-port table (with a `total` column when there are several ports), then the per-QP
    /// table; counters that are 0 everywhere are left out unless `all`.
    pub fn table(&self, all: bool) -> String {
        let mut out = self.port_table(all);
        if !self.qps.is_empty() {
            out.push('\n');
            out.push_str(&self.qp_table(all));
        }
        out
    }

    /// The per-port table under its heading (a `total` column when there are several ports).
    pub fn port_table(&self, all: bool) -> String {
        let mut cols: Vec<Column> = self
            .ports
            .iter()
            .map(|p| Column::of(&p.link, &p.counters))
            .collect();
        if self.ports.len() > 1 {
            cols.push(Column::of("total", &self.total()));
        }
        format!(
            "Counters per port (mlx5 / rxe names)\n{}",
            table(&cols, all)
        )
    }

    /// The per-QP table under its heading (columns `LINK qp LQPN`).
    pub fn qp_table(&self, all: bool) -> String {
        let cols: Vec<Column> = self
            .qps
            .iter()
            .map(|q| Column::of(&format!("{} qp {}", q.link, q.lqpn), &q.counters))
            .collect();
        format!("Counters per QP\n{}", table(&cols, all))
    }

    /// The lines `rdma statistic show` and `rdma statistic qp show` would print (one per port,
    /// then one per QP; every counter, zeros included).
    pub fn rdma_lines(&self) -> String {
        let mut out = String::new();
        let pairs = |c: &RdmaCounters| {
            c.pairs()
                .iter()
                .map(|(n, v)| format!(" {n} {v}"))
                .collect::<String>()
        };
        for p in &self.ports {
            out.push_str(&format!("link {}{}\n", p.link, pairs(&p.counters)));
        }
        for q in &self.qps {
            out.push_str(&format!(
                "link {} lqpn {} rqpn {} qp-type RC{}\n",
                q.link,
                q.lqpn,
                q.rqpn,
                pairs(&q.counters)
            ));
        }
        out
    }
}

/// One column of a counter table: a heading and `(counter, value)` cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Column {
    /// The heading (a link, a QP, a JSON path).
    pub heading: String,
    /// The cells, already formatted.
    pub cells: Vec<(String, String)>,
}

impl Column {
    /// A column of `c`'s counters under `heading`.
    pub fn of(heading: &str, c: &RdmaCounters) -> Self {
        Column {
            heading: heading.to_owned(),
            cells: c
                .pairs()
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v.to_string()))
                .collect(),
        }
    }
}

/// Columns this wide at most are printed side by side; more wrap into further blocks.
const COLUMNS_PER_BLOCK: usize = 6;

/// The counter table every command prints: one row per counter (in first-seen order), one column
/// per heading, numbers right-aligned, blocks of at most six columns; rows that are `0` (or
/// missing) in every column are left out unless `all`, and a last line says how many.
pub fn table(columns: &[Column], all: bool) -> String {
    let mut names: Vec<&str> = Vec::new();
    for c in columns {
        for (n, _) in &c.cells {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    let value = |c: &Column, name: &str| {
        c.cells
            .iter()
            .find(|(n, _)| n == name)
            .map_or("0", |(_, v)| v.as_str())
            .to_owned()
    };
    let zero = |v: &str| v == "0" || v == "0.0" || v == "-";
    let (shown, hidden): (Vec<&str>, Vec<&str>) = names
        .into_iter()
        .partition(|n| all || columns.iter().any(|c| !zero(&value(c, n))));
    let name_w = shown.iter().map(|n| n.len()).max().unwrap_or(0).max(7);
    let mut out = String::new();
    for block in columns.chunks(COLUMNS_PER_BLOCK) {
        let widths: Vec<usize> = block
            .iter()
            .map(|c| {
                shown
                    .iter()
                    .map(|n| value(c, n).len())
                    .chain([c.heading.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut line = format!("  {:<name_w$}", "counter");
        for (c, w) in block.iter().zip(&widths) {
            line.push_str(&format!("  {:>w$}", c.heading));
        }
        out.push_str(line.trim_end());
        out.push('\n');
        for n in &shown {
            let mut line = format!("  {n:<name_w$}");
            for (c, w) in block.iter().zip(&widths) {
                line.push_str(&format!("  {:>w$}", value(c, n)));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    if !hidden.is_empty() {
        out.push_str(&format!(
            "  ({} more counters are 0 everywhere)\n",
            hidden.len()
        ));
    }
    out
}
