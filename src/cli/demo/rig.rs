//! What the demo runs on: EAL, one mbuf pool, the real-time switch with a ring-pair port per
//! host (the receiver's toward it the bottleneck), the hosts' endpoints on the other ends, the
//! tap mirror in tap mode, and the metrics hub. Not here: the polling loop
//! ([`super::drive`]), the flows ([`super::flows`]).

use std::sync::Arc;

use anyhow::Context;

use roce::metrics::server::MetricsServer;
use roce::metrics::{MetricsHub, Publisher};
use roce_dpdk::clock::MonotonicClock;
use roce_dpdk::runtime::{Runtime, RuntimeConfig};
use roce_dpdk::{ring_pair, DpdkPort, Eal, EalConfig, Mempool, MempoolConfig, PortConfig};
use roce_fabric::switching::rt_switch::{RtSwitch, RtSwitchConfig};
use roce_proto::cc::Rate;
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::time::Duration;

use super::{demo_pfc, mac, DemoArgs, Host, Plan};

/// The DPDK pieces of a run and the switch between the hosts.
pub(super) struct Rig {
    // Field order is drop order: the ports (mirror, switch) before the pool before EAL.
    /// The tap mirror of every frame crossing the switch (tap mode).
    pub(super) mirror: Option<DpdkPort>,
    pub(super) switch: RtSwitch<DpdkPort>,
    pub(super) publisher: Publisher,
    _metrics: Option<MetricsServer>,
    pub(super) hub: Arc<MetricsHub>,
    pub(super) pool: Arc<Mempool>,
    pub(super) eal: Eal,
}

impl Rig {
    /// EAL (with the tap vdev when mirroring to `tap_if`), the metrics, the pool and the
    /// switch, with no port yet.
    pub(super) fn open(args: &DemoArgs, plan: &Plan, tap_if: Option<&str>) -> anyhow::Result<Rig> {
        let mut eal_args = format!("--log-level=3 -m 256 {}", args.eal);
        if let Some(ifname) = tap_if {
            eal_args.push_str(&format!(" --vdev=net_tap0,iface={ifname}"));
        }
        let eal = Eal::init(&EalConfig {
            require_ports: false,
            ..EalConfig::new(eal_args)
        })
        .context("starting DPDK")?;
        let hub = Arc::new(MetricsHub::new());
        let metrics = args.metrics.start(&eal, &hub)?;
        let pool = Arc::new(
            Mempool::new(
                &eal,
                &MempoolConfig {
                    size: 16383,
                    ..MempoolConfig::default()
                },
            )
            .context("creating the mbuf pool")?,
        );
        let mut switch = RtSwitch::new(RtSwitchConfig {
            buffer_bytes: args.buffer,
            ecn: Some(plan.ecn),
            seed: args.seed,
        });
        if args.pfc {
            switch = switch.with_pfc(demo_pfc(args.buffer, args.senders));
        }
        Ok(Rig {
            mirror: None,
            switch,
            publisher: Publisher::default(),
            _metrics: metrics,
            hub,
            pool,
            eal,
        })
    }

    /// The receiver `r` and the senders `s1`.., each on a ring pair whose other end is a
    /// switch port (the receiver's the bottleneck), driven on `clock`.
    pub(super) fn hosts<'c>(
        &mut self,
        args: &DemoArgs,
        clock: &'c MonotonicClock,
    ) -> anyhow::Result<Vec<Host<'c>>> {
        let port_cfg = PortConfig {
            link_timeout: std::time::Duration::from_secs(2),
            ..PortConfig::default()
        };
        let bottleneck = Rate::from_bps_f64(args.bottleneck_gbps * 1e9);
        let runtime = RuntimeConfig {
            pfc_link_bps: args.pfc.then_some((args.host_gbps * 1e9) as u64),
            ..RuntimeConfig::default()
        };
        let mut hosts = Vec::new();
        for i in 0..=args.senders {
            let (host_id, sw_id) = ring_pair(&self.eal, &format!("demo{i}"), 1024)
                .with_context(|| format!("creating the ring ports of host {i}"))?;
            let host_port = DpdkPort::new(&self.eal, host_id, self.pool.clone(), &port_cfg)?;
            let sw_port = DpdkPort::new(&self.eal, sw_id, self.pool.clone(), &port_cfg)?;
            let (name, ip) = if i == 0 {
                ("r".to_owned(), [198, 18, 0, 1])
            } else {
                (format!("s{i}"), [198, 18, 0, 10 + i as u8])
            };
            let m = mac(i as u8 + 1);
            let rate = (i == 0).then_some(bottleneck);
            self.switch.add_port(sw_port, Some(m), rate);
            let mut cfg = EndpointConfig::ipv4(m, ip.into());
            cfg.udp_port_seed = i as u16;
            cfg.cnp_interval = Duration::from_micros(args.cnp_interval_us);
            hosts.push(Host {
                name,
                ep: Endpoint::new(cfg),
                rt: Runtime::new(host_port, clock, runtime),
            });
        }
        Ok(hosts)
    }

    /// Starts the tap port EAL created for the mirror.
    pub(super) fn start_mirror(&mut self) -> anyhow::Result<()> {
        let id = self
            .eal
            .port_by_name("net_tap0")
            .context("finding the tap port")?;
        let cfg = PortConfig {
            link_timeout: std::time::Duration::ZERO,
            ..PortConfig::default()
        };
        let port = DpdkPort::new(&self.eal, id, self.pool.clone(), &cfg)
            .context("starting the tap port")?;
        self.mirror = Some(port);
        Ok(())
    }
}
