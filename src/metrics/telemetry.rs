//! The hub's counters on DPDK's telemetry socket, for `dpdk-telemetry.py`:
//! `/roce/ports` (the devices), `/roce/port,DEVICE` (its counters, mlx5 / rxe names, and bytes),
//! `/roce/qps,DEVICE` (its QPs), `/roce/qp,DEVICE,QPN` (the QP's counters and DCQCN state),
//! `/roce/switch` (the demo switch's counters).

use std::sync::Arc;

use roce_dpdk::telemetry::{register as register_cmd, TelReply, TelValue};
use roce_dpdk::Eal;

use super::{Exposition, MetricsHub};

/// How one command answers from an exposition and its parameters.
type Answer = fn(&Exposition, &str) -> Option<TelReply>;

/// Registers the `/roce/...` commands, answered from `hub`.
pub fn register(eal: &Eal, hub: &Arc<MetricsHub>) -> anyhow::Result<()> {
    let cmds: [(&str, &str, Answer); 5] = [
        ("/roce/ports", "The devices of this roce process", ports),
        (
            "/roce/port",
            "Counters of one device. Parameter: device",
            port,
        ),
        (
            "/roce/qps",
            "QP numbers of one device. Parameter: device",
            qps,
        ),
        (
            "/roce/qp",
            "Counters and congestion control of one QP. Parameters: device,qpn",
            qp,
        ),
        ("/roce/switch", "Counters of the software switch", switch),
    ];
    for (cmd, help, f) in cmds {
        let hub = hub.clone();
        register_cmd(
            eal,
            cmd,
            help,
            Arc::new(move |params: &str| f(&hub.collect(), params)),
        )?;
    }
    Ok(())
}

fn ports(e: &Exposition, _: &str) -> Option<TelReply> {
    Some(TelReply::List(
        e.ports.iter().map(|p| p.device.clone()).collect(),
    ))
}

fn port(e: &Exposition, device: &str) -> Option<TelReply> {
    let p = e.ports.iter().find(|p| p.device == device)?;
    let mut d: Vec<(String, TelValue)> = p
        .snapshot
        .port
        .pairs()
        .into_iter()
        .map(|(n, v)| (n.to_owned(), TelValue::U64(v)))
        .collect();
    d.push(("tx_bytes".into(), TelValue::U64(p.snapshot.tx_bytes)));
    d.push(("rx_bytes".into(), TelValue::U64(p.snapshot.rx_bytes)));
    Some(TelReply::Dict(d))
}

fn qps(e: &Exposition, device: &str) -> Option<TelReply> {
    let p = e.ports.iter().find(|p| p.device == device)?;
    Some(TelReply::List(
        p.snapshot.qps.iter().map(|q| q.qpn.to_string()).collect(),
    ))
}

fn qp(e: &Exposition, params: &str) -> Option<TelReply> {
    let (device, qpn) = params.split_once(',')?;
    let qpn: u32 = qpn.trim().parse().ok()?;
    let q = e
        .ports
        .iter()
        .find(|p| p.device == device)?
        .snapshot
        .qps
        .iter()
        .find(|q| q.qpn == qpn)?;
    let mut d: Vec<(String, TelValue)> = q
        .counters
        .pairs()
        .into_iter()
        .map(|(n, v)| (n.to_owned(), TelValue::U64(v)))
        .collect();
    d.push(("dest_qpn".into(), TelValue::U64(u64::from(q.dest_qpn))));
    d.push(("send_queue_wqes".into(), TelValue::U64(q.send_queue)));
    d.push(("pacer_wait_ns".into(), TelValue::U64(q.pacer_wait_ns)));
    if let Some(cc) = &q.cc {
        d.push(("cc_rate_bps".into(), TelValue::U64(cc.rate_bps as u64)));
        d.push((
            "cc_target_rate_bps".into(),
            TelValue::U64(cc.target_rate_bps as u64),
        ));
        d.push(("cc_alpha".into(), TelValue::Str(format!("{:.6}", cc.alpha))));
        d.push(("cc_rate_cuts".into(), TelValue::U64(cc.rate_cuts)));
        d.push(("cc_rate_increases".into(), TelValue::U64(cc.rate_increases)));
    }
    Some(TelReply::Dict(d))
}

fn switch(e: &Exposition, _: &str) -> Option<TelReply> {
    let s = e.switch?;
    Some(TelReply::Dict(vec![
        ("ecn_marked".into(), TelValue::U64(s.ecn_marked)),
        ("drops".into(), TelValue::U64(s.drops)),
        ("pfc_pause_frames".into(), TelValue::U64(s.pfc_pause_frames)),
        ("forwarded".into(), TelValue::U64(s.forwarded)),
        ("queue_bytes".into(), TelValue::U64(s.queue_bytes)),
    ]))
}
