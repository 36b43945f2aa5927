//! What a finished demo reports: the summary (per flow, the switch, congestion control) and the
//! metrics exposition of the hosts and the switch.

use roce::metrics::{Exposition, PortMetrics, SwitchMetrics};
use roce::report::demo::{CcSummary, DemoSummary, FlowResult, Series, Setup, SwitchSummary};
use roce_dpdk::lcore::shard::EndpointSnapshot;
use roce_dpdk::DpdkPort;
use roce_fabric::switching::rt_switch::RtSwitch;
use roce_proto::endpoint::Endpoint;
use roce_proto::time::{Duration, Instant};

use super::flows::{self, Eps, Flow};
use super::{tap_name, DemoArgs, Plan};
use crate::cli::ops::Op;

/// The run's summary, from the hosts' and switch's counters and the sampled series.
pub(super) fn summarize(
    args: &DemoArgs,
    plan: &Plan,
    hosts: &[Eps],
    flows: &[Flow],
    switch: &RtSwitch<DpdkPort>,
    series: &Series,
    (start, end): (Instant, Instant),
) -> DemoSummary {
    let stats = flows::stats(hosts, flows);
    let counters = stats.total();
    let receiver = hosts.first().map_or("r", |h| h.0);
    let duration = Duration::from(plan.duration).as_secs_f64();
    let mut results = Vec::new();
    let (mut cuts, mut increases) = (0, 0);
    let mut final_rate = Vec::new();
    for (id, f) in flows.iter().enumerate() {
        let sender = hosts.get(f.sender).map_or("?", |h| h.0);
        let (from, to) = (sender, receiver);
        let elapsed = f
            .last_done
            .map_or(duration, |t| t.saturating_since(start).as_secs_f64())
            .max(1e-9);
        let bytes = f.verified as f64 * f.payload.len() as f64;
        let m = flows::cc_metrics(hosts, f);
        cuts += m.rate_cuts;
        increases += m.rate_increases;
        final_rate.push(m.rate.as_gbps_f64());
        let all_done = f.verified == f.posted && f.completed == f.posted;
        results.push(FlowResult {
            id,
            op: f.op.to_string(),
            from: from.into(),
            to: to.into(),
            size: f.payload.len() as u64,
            messages: f.verified,
            goodput_gbps: bytes * 8.0 / elapsed / 1e9,
            bw_peak_mb_s: series.peak_gbps(id) * 1e9 / 8.0 / 1e6,
            bw_average_mb_s: bytes / elapsed / 1e6,
            msg_rate_mpps: f.verified as f64 / elapsed / 1e6,
            verified: f.errors.is_empty() && all_done && f.verified > 0,
            errors: f.errors.clone(),
        });
    }
    let sw = switch.counters();
    let (queue_mean, queue_max) = series.queue_stats();
    let verified =
        results.iter().all(|f| f.verified) && counters.transport_errors() == 0 && sw.rx_frames > 0;
    DemoSummary {
        verified,
        setup: Setup {
            senders: hosts.iter().skip(1).map(|h| h.0.to_owned()).collect(),
            ops: plan.ops.iter().map(Op::to_string).collect(),
            port: plan.spec.to_string(),
            tap: tap_name(&plan.spec),
            bottleneck_gbps: args.bottleneck_gbps,
            buffer_bytes: args.buffer,
            kmin_bytes: args.kmin,
            kmax_bytes: args.kmax,
            pmax: args.pmax,
            host_gbps: args.host_gbps,
            cc: plan.cc.name().to_owned(),
            mtu: plan.mtu.bytes(),
            size: plan.size,
            depth: args.depth,
            cnp_interval_us: args.cnp_interval_us,
        },
        duration_s: duration,
        bottleneck_gbps: args.bottleneck_gbps,
        flows: results,
        counters,
        stats,
        switch: SwitchSummary {
            ecn_marked: sw.ecn_marked,
            queue_mean_bytes: queue_mean,
            queue_max_bytes: queue_max,
            drops: sw.drops,
            pfc_pause_frames: sw.pfc_pause_frames,
            forwarded: sw.tx_frames,
            bottleneck_busy_gbps: switch.port_tx_bytes(0) as f64 * 8.0
                / end.saturating_since(start).as_secs_f64().max(1e-9)
                / 1e9,
        },
        host_pauses: Vec::new(),
        cc: CcSummary {
            name: plan.cc.name().into(),
            line_rate_gbps: args.host_gbps,
            rate_cuts: cuts,
            rate_increases: increases,
            min_rate_gbps: series.min_cc_rate().min(args.host_gbps),
            final_rate_gbps: final_rate,
        },
    }
}

/// The hosts' and the switch's counters now, for the metrics.
pub(super) fn exposition(hosts: &[Eps], switch: &RtSwitch<DpdkPort>, now: Instant) -> Exposition {
    let ports = hosts
        .iter()
        .map(|&(name, ep)| PortMetrics {
            device: name.to_owned(),
            snapshot: EndpointSnapshot::of(ep, now),
        })
        .collect();
    with_switch(ports, hosts.first().map(|h| h.1), switch)
}

/// `ports` with the switch's counters.
pub(super) fn with_switch(
    ports: Vec<PortMetrics>,
    receiver: Option<&Endpoint>,
    switch: &RtSwitch<DpdkPort>,
) -> Exposition {
    let sw = switch.counters();
    Exposition {
        ports,
        switch: Some(SwitchMetrics {
            ecn_marked: sw.ecn_marked,
            drops: sw.drops,
            pfc_pause_frames: sw.pfc_pause_frames,
            priority: receiver.map_or(3, |ep| ep.config().marking.data_pcp),
            queue_bytes: switch.queue_bytes(0),
            forwarded: sw.tx_frames,
        }),
    }
}
