//! PFC per port and priority over a whole run, as a NIC's per-priority counters give it (mlx5's
//! `tx_prio<p>_pause`, `rx_prio<p>_pause`, `rx_prio<p>_pause_duration`): for every switch port
//! and host NIC that sent or received a pause, how many and how long its transmitter was held.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::engines::ScenarioEngine;
use crate::net::fabric::Fabric;
use crate::{HostId, Node};

/// The text summary lists the ports held longest; the JSON has them all.
pub const TEXT_ROWS: usize = 8;

/// PFC on one port and priority.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PfcPause {
    /// The node: a switch's or a host's name.
    pub node: String,
    /// The port (0 for a host's NIC).
    pub port: u16,
    /// The priority.
    pub priority: usize,
    /// Pause frames the port sent (XOFF and XON).
    pub tx_pause: u64,
    /// Pause frames the port received.
    pub rx_pause: u64,
    /// How long the port's transmitter was held at this priority, µs.
    pub rx_pause_duration_us: f64,
}

/// Every port and priority of `f` that sent or received a pause, switches first.
pub fn collect(f: &Fabric<ScenarioEngine>) -> Vec<PfcPause> {
    let switches = f.switch_ports().map(|(s, p)| {
        let name = f.switch_name(s).to_owned();
        (Node::Switch(s), p, name)
    });
    let hosts = (0..f.host_count()).map(|h| {
        let name = f.host_name(HostId(h)).to_owned();
        (Node::Host(HostId(h)), 0, name)
    });
    let mut out = Vec::new();
    for (node, port, name) in switches.chain(hosts) {
        let c = f.port_counters(node, port);
        for (priority, p) in c.prio.iter().enumerate() {
            if p.pause_sent > 0 || p.pause_received > 0 || p.pause_ns > 0 {
                out.push(PfcPause {
                    node: name.clone(),
                    port,
                    priority,
                    tx_pause: p.pause_sent,
                    rx_pause: p.pause_received,
                    rx_pause_duration_us: p.pause_ns as f64 / 1e3,
                });
            }
        }
    }
    out
}

/// The summary's lines: the [`TEXT_ROWS`] ports held longest (then those that sent most).
pub fn lines(pauses: &[PfcPause]) -> String {
    let mut s = String::new();
    if pauses.is_empty() {
        return s;
    }
    let mut order: Vec<&PfcPause> = pauses.iter().collect();
    order.sort_by(|a, b| {
        b.rx_pause_duration_us
            .total_cmp(&a.rx_pause_duration_us)
            .then(b.tx_pause.cmp(&a.tx_pause))
    });
    let _ = writeln!(
        s,
        "pfc by port and priority (pause frames sent, received, time held):"
    );
    for p in order.iter().take(TEXT_ROWS) {
        let at = format!("{}:{}", p.node, p.port);
        let _ = writeln!(
            s,
            "  {at:<14} prio {}  sent {:>6}  received {:>6}  held {:>10.1} us",
            p.priority, p.tx_pause, p.rx_pause, p.rx_pause_duration_us
        );
    }
    if order.len() > TEXT_ROWS {
        let _ = writeln!(s, "  ... {} more (--json)", order.len() - TEXT_ROWS);
    }
    s
}
