//! The HPCC simulator's PFC output file: one line per PFC frame a port received,
//! `time node_id node_type if_index type` (time in ns; node type 0 for a host, 1 for a switch;
//! the port's ns-3 interface index; type 1 for a pause, 0 for a resume), as `third.cc`'s
//! `get_pfc` writes it from each `QbbNetDevice`'s `QbbPfc` trace.

use std::fmt::Write as _;

use super::tokens::Tokens;
use super::topology_file::TopologyFile;
use super::HpccError;
use crate::net::fabric::PfcEvent;
use crate::Node;

/// One line of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcRecord {
    /// When the frame arrived, ns.
    pub t_ns: u64,
    /// The receiving node's id in the topology file.
    pub node: usize,
    /// 1 for a switch, 0 for a host.
    pub node_type: u8,
    /// The receiving port's interface index: ns-3 numbers a node's devices from 1 in the
    /// order of the topology file's links (0 is its loopback).
    pub if_index: u32,
    /// Pause (1) or resume (0).
    pub pause: bool,
}

/// The records of `events` on `topo`'s fabric (hosts and switches in node order, ports in
/// link order, as its `to_topology` builds them).
pub fn records(topo: &TopologyFile, events: &[PfcEvent]) -> Vec<PfcRecord> {
    let hosts = topo.hosts();
    let switches: Vec<usize> = (0..topo.nodes).filter(|&n| topo.is_switch[n]).collect();
    events
        .iter()
        .filter_map(|e| {
            let (node, node_type) = match e.node {
                Node::Host(h) => (*hosts.get(h.0)?, 0),
                Node::Switch(s) => (*switches.get(s.0)?, 1),
            };
            Some(PfcRecord {
                t_ns: e.t_ns,
                node,
                node_type,
                if_index: u32::from(e.port) + 1,
                pause: e.pause,
            })
        })
        .collect()
}

/// The file's text for `records`.
pub fn write(records: &[PfcRecord]) -> String {
    let mut s = String::new();
    for r in records {
        let _ = writeln!(
            s,
            "{} {} {} {} {}",
            r.t_ns,
            r.node,
            r.node_type,
            r.if_index,
            u8::from(r.pause)
        );
    }
    s
}

/// Parses a PFC file (ours or the simulator's).
pub fn parse(file: &str, text: &str) -> Result<Vec<PfcRecord>, HpccError> {
    let mut t = Tokens::of_text(file, text);
    let flag = |s: &str| match s {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    };
    let mut out = Vec::new();
    while t.next_is_some()? {
        out.push(PfcRecord {
            t_ns: t.num("a time in ns")?,
            node: t.num("a node id")?,
            node_type: t.num("a node type")?,
            if_index: t.num("an interface index")?,
            pause: t.value("0 or 1", flag)?.1,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HostId, SwitchId};

    #[test]
    fn lines_name_the_receiving_node_and_port_as_ns3_does() {
        // Hosts 0, 1 and 3 under switches 2 and 4 (node ids); switch 2's ports: to 0, 1, 4.
        let topo = TopologyFile::parse(
            "topo.txt",
            "5 2 3\n2 4\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n2 4 400Gbps 1us 0\n",
        )
        .unwrap();
        let ev = |node, port, pause| PfcEvent {
            t_ns: 2_000_001_234,
            node,
            port,
            prio: 3,
            pause,
        };
        let events = [
            ev(Node::Switch(SwitchId(0)), 2, true),
            ev(Node::Host(HostId(2)), 0, true),
            ev(Node::Switch(SwitchId(1)), 0, false),
        ];
        let text = write(&records(&topo, &events));
        assert_eq!(
            text,
            "2000001234 2 1 3 1\n2000001234 3 0 1 1\n2000001234 4 1 1 0\n"
        );
        assert_eq!(parse("pfc.txt", &text).unwrap(), records(&topo, &events));
        let bad = parse("pfc.txt", "1 2 1 3 2\n").unwrap_err().to_string();
        assert!(bad.starts_with("pfc.txt:1"), "{bad}");
    }
}
