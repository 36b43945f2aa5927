//! An [`Exposition`] as OpenMetrics text (`prometheus-client` does the format): per port and per
//! QP the transport's counters under their mlx5 / rxe names (`roce_port_np_cnp_sent_total`,
//! `roce_qp_packet_seq_err_total`), bytes, the DCQCN state of each QP (rate, target rate,
//! alpha, cuts), its pacer wait and send queue, and the switch's marks, drops and PFC pauses.
//! Labels: `device`, `port` (always 1, as `rdma` numbers a device's only port), `qp`,
//! `priority`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

use super::Exposition;

/// The OpenMetrics content type the server answers with.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PortLabels {
    device: String,
    port: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QpLabels {
    device: String,
    port: String,
    qp: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SwitchLabels {
    device: String,
    priority: String,
}

type Counters<L> = Family<L, Counter>;
type Gauges<L> = Family<L, Gauge<f64, AtomicU64>>;

fn port_labels(device: &str) -> PortLabels {
    PortLabels {
        device: device.to_owned(),
        port: "1".to_owned(),
    }
}

/// Renders `e` as OpenMetrics text (ending in `# EOF`).
pub fn render(e: &Exposition) -> String {
    let mut reg = Registry::default();
    let mut families: Vec<(&'static str, Counters<PortLabels>, Counters<QpLabels>)> = Vec::new();
    let names = roce_proto::counters::RdmaCounters::default().pairs();
    for (name, _) in &names {
        families.push((name, Family::default(), Family::default()));
    }
    for p in &e.ports {
        let pl = port_labels(&p.device);
        for ((_, port_f, _), (_, v)) in families.iter().zip(p.snapshot.port.pairs()) {
            port_f.get_or_create(&pl).inc_by(v);
        }
        for q in &p.snapshot.qps {
            let ql = QpLabels {
                device: p.device.clone(),
                port: "1".into(),
                qp: q.qpn.to_string(),
            };
            for ((_, _, qp_f), (_, v)) in families.iter().zip(q.counters.pairs()) {
                qp_f.get_or_create(&ql).inc_by(v);
            }
        }
    }
    for (name, port_f, qp_f) in families {
        reg.register(
            format!("roce_port_{name}"),
            format!("{name} of the port (mlx5 / rxe counter)"),
            port_f,
        );
        reg.register(format!("roce_qp_{name}"), format!("{name} of the QP"), qp_f);
    }
    let bytes = |what: &str| -> Counters<PortLabels> {
        let f: Counters<PortLabels> = Family::default();
        for p in &e.ports {
            let v = if what == "tx" {
                p.snapshot.tx_bytes
            } else {
                p.snapshot.rx_bytes
            };
            f.get_or_create(&port_labels(&p.device)).inc_by(v);
        }
        f
    };
    reg.register_with_unit(
        "roce_port_tx",
        "Bytes of frames sent",
        Unit::Bytes,
        bytes("tx"),
    );
    reg.register_with_unit(
        "roce_port_rx",
        "Bytes of frames received",
        Unit::Bytes,
        bytes("rx"),
    );
    qp_state(&mut reg, e);
    if let Some(s) = &e.switch {
        let sl = SwitchLabels {
            device: "switch".into(),
            priority: s.priority.to_string(),
        };
        let counter = |v: u64| {
            let f: Counters<SwitchLabels> = Family::default();
            f.get_or_create(&sl).inc_by(v);
            f
        };
        reg.register(
            "roce_switch_ecn_marked_packets",
            "ECT packets the switch marked CE",
            counter(s.ecn_marked),
        );
        reg.register(
            "roce_switch_dropped_packets",
            "Packets the switch dropped (buffer full)",
            counter(s.drops),
        );
        reg.register(
            "roce_switch_pfc_pause_frames",
            "PFC pause frames the switch sent",
            counter(s.pfc_pause_frames),
        );
        reg.register(
            "roce_switch_forwarded_packets",
            "Packets the switch forwarded",
            counter(s.forwarded),
        );
        let g: Gauges<SwitchLabels> = Family::default();
        g.get_or_create(&sl).set(s.queue_bytes as f64);
        reg.register_with_unit(
            "roce_switch_queue",
            "Bytes queued toward the bottleneck",
            Unit::Bytes,
            g,
        );
    }
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    out
}

/// Per QP: the congestion controller's state, the pacer and the send queue.
fn qp_state(reg: &mut Registry, e: &Exposition) {
    let rate: Gauges<QpLabels> = Family::default();
    let target: Gauges<QpLabels> = Family::default();
    let alpha: Gauges<QpLabels> = Family::default();
    let cuts: Counters<QpLabels> = Family::default();
    let increases: Counters<QpLabels> = Family::default();
    let wait: Gauges<QpLabels> = Family::default();
    let sq: Gauges<QpLabels> = Family::default();
    for p in &e.ports {
        for q in &p.snapshot.qps {
            let l = QpLabels {
                device: p.device.clone(),
                port: "1".into(),
                qp: q.qpn.to_string(),
            };
            wait.get_or_create(&l).set(q.pacer_wait_ns as f64 / 1e9);
            sq.get_or_create(&l).set(q.send_queue as f64);
            if let Some(cc) = &q.cc {
                rate.get_or_create(&l).set(cc.rate_bps / 8.0);
                target.get_or_create(&l).set(cc.target_rate_bps / 8.0);
                alpha.get_or_create(&l).set(cc.alpha);
                cuts.get_or_create(&l).inc_by(cc.rate_cuts);
                increases.get_or_create(&l).inc_by(cc.rate_increases);
            }
        }
    }
    // Prometheus wants base units: bytes, not bits.
    let bps = || Unit::Other("bytes_per_second".into());
    reg.register_with_unit(
        "roce_qp_cc_rate",
        "Congestion control: current rate (DCQCN RC)",
        bps(),
        rate,
    );
    reg.register_with_unit(
        "roce_qp_cc_target_rate",
        "Congestion control: target rate (DCQCN RT)",
        bps(),
        target,
    );
    reg.register_with_unit(
        "roce_qp_cc_alpha",
        "Congestion control: alpha (congestion estimate)",
        Unit::Other("ratio".into()),
        alpha,
    );
    reg.register(
        "roce_qp_cc_rate_cuts",
        "Congestion control: rate decreases",
        cuts,
    );
    reg.register(
        "roce_qp_cc_rate_increases",
        "Congestion control: rate increase events",
        increases,
    );
    reg.register_with_unit(
        "roce_qp_pacer_wait",
        "How long the next frame waits for the pacer",
        Unit::Seconds,
        wait,
    );
    reg.register(
        "roce_qp_send_queue_wqes",
        "Work requests posted and not completed",
        sq,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::PortMetrics;
    use roce_dpdk::lcore::shard::{CcState, EndpointSnapshot, QpSnapshot};

    #[test]
    fn counters_are_named_after_mlx5_with_total_and_labelled_by_device_port_qp() {
        let mut snap = EndpointSnapshot::default();
        snap.port.np_cnp_sent = 7;
        snap.tx_bytes = 1000;
        let mut q = QpSnapshot {
            qpn: 17,
            cc: Some(CcState {
                rate_bps: 5e9,
                alpha: 0.5,
                rate_cuts: 3,
                ..CcState::default()
            }),
            ..QpSnapshot::default()
        };
        q.counters.rp_cnp_handled = 4;
        snap.qps.push(q);
        let text = render(&Exposition {
            ports: vec![PortMetrics {
                device: "r".into(),
                snapshot: snap,
            }],
            switch: None,
        });
        for line in [
            "roce_port_np_cnp_sent_total{device=\"r\",port=\"1\"} 7",
            "roce_qp_rp_cnp_handled_total{device=\"r\",port=\"1\",qp=\"17\"} 4",
            "roce_port_tx_bytes_total{device=\"r\",port=\"1\"} 1000",
            "roce_qp_cc_rate_bytes_per_second{device=\"r\",port=\"1\",qp=\"17\"} 625000000.0",
            "roce_qp_cc_alpha_ratio{device=\"r\",port=\"1\",qp=\"17\"} 0.5",
            "roce_qp_cc_rate_cuts_total{device=\"r\",port=\"1\",qp=\"17\"} 3",
            "# TYPE roce_port_np_cnp_sent counter",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line:?} missing from\n{text}"
            );
        }
        assert!(text.ends_with("# EOF\n"));
    }
}
