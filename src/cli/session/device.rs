//! Opening a session's DPDK port: EAL with the port the arguments name, an mbuf pool for frames
//! of the path MTU, the port up with its queue pairs, and our MAC and IP on it. Not here: what
//! runs on the port ([`super::Session`], or lcores in `roce perf --cores`).

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::{anyhow, Context};

use roce_dpdk::{
    memif, DpdkError, DpdkPort, Eal, EalConfig, MemifRole, Mempool, MempoolConfig, PortConfig,
    PortSpec,
};
use roce_proto::wire::EthernetAddress;

use super::args::PortArgs;

/// A started DPDK port with everything a session needs around it.
pub struct Device {
    // Field order is drop order: the port before the pool before EAL.
    /// The port (queue 0; split it for more lcores).
    pub port: DpdkPort,
    /// Its mbuf pool.
    pub pool: Arc<Mempool>,
    /// EAL.
    pub eal: Eal,
    /// Our MAC on it.
    pub mac: EthernetAddress,
    /// Our IPv4 address.
    pub ip: Ipv4Addr,
}

/// An af_xdp port sends and receives through the kernel interface, whose MTU DPDK's net_af_xdp
/// leaves as it is: the kernel would drop every larger frame, so a too small one is refused
/// here, with the command that fixes it. An interface we cannot read is left to DPDK.
fn kernel_mtu_holds(iface: &str, l3: usize, roce_mtu: u32) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read_to_string(format!("/sys/class/net/{iface}/mtu")) else {
        return Ok(());
    };
    match text.trim().parse::<usize>() {
        Ok(mtu) if mtu < l3 => Err(anyhow!(
            "{iface}'s MTU is {mtu}, below the {l3} bytes a RoCE MTU of {roce_mtu} needs \
             (ip link set dev {iface} mtu {l3})"
        )),
        _ => Ok(()),
    }
}

/// Starts EAL with the port of `args` and brings it up with `queues` queue pairs for frames of
/// `roce_mtu` payload. A memif port whose role the spec leaves open takes `memif_role` (the
/// side of the TCP exchange: a server listens on the socket, a client connects to it).
pub fn open_device(
    args: &PortArgs,
    roce_mtu: u32,
    queues: u16,
    memif_role: MemifRole,
) -> anyhow::Result<Device> {
    let ip = args.ip()?.address();
    let mac = args.mac()?;
    let spec = args.port.clone().with_default_role(memif_role);
    let mut eal_args = crate::cli::port::quiet_eal_args(&args.eal);
    let label = match &args.vdev {
        Some(v) => format!("--vdev {v}"),
        None => format!("--port {spec}"),
    };
    let timeout = StdDuration::from_secs(args.timeout.max(1));
    // RoCE headers (Eth 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4) on top of the MTU.
    let l3 = roce_mtu as usize + 80;
    if args.vdev.is_none() {
        memif::prepare(&spec, timeout).with_context(|| format!("--port {spec}"))?;
        if let PortSpec::AfXdp { iface, .. } = &spec {
            kernel_mtu_holds(iface, l3, roce_mtu).with_context(|| format!("--port {spec}"))?;
        }
    }
    let port_args = match &args.vdev {
        Some(spec) => vec![format!("--vdev={spec}")],
        None => spec.eal_args(0),
    };
    for a in port_args {
        eal_args.push(' ');
        eal_args.push_str(&shlex::try_quote(&a).unwrap_or_default());
    }
    // What a missing privilege is checked against: a vdev string names its driver first
    // (`net_tap0,iface=x`).
    let kind = match &args.vdev {
        Some(v) if v.starts_with("net_tap") => PortSpec::Tap(None),
        Some(v) if v.starts_with("net_af_packet") => PortSpec::AfPacket(v.clone()),
        Some(v) if v.starts_with("net_af_xdp") => PortSpec::AfXdp {
            iface: v.clone(),
            queue: 0,
            prog: None,
        },
        Some(_) => PortSpec::Null,
        None => spec.clone(),
    };
    let no_port = || match kind.missing_privilege() {
        Some(why) => anyhow!("no DPDK port: {label}: {why}"),
        None => anyhow!("no DPDK port: {label} created nothing"),
    };
    let eal = Eal::init(&EalConfig::new(eal_args)).map_err(|e| match e {
        DpdkError::NoPorts => no_port(),
        e => anyhow!("DPDK port {label}: {e}"),
    })?;
    let id = *eal.port_ids().first().ok_or_else(no_port)?;
    // + 530: net_af_packet wants 2048-byte frames (2016 bytes past its headroom) in an mbuf.
    let pool = Arc::new(
        Mempool::new(
            &eal,
            &MempoolConfig::for_frames(l3.max(1500) + 18 + 530, 8191),
        )
        .context("creating the mbuf pool")?,
    );
    let config = PortConfig {
        mtu: (l3 > 1500).then_some(l3),
        // A memif link is up only once the peer process has connected: wait as long as for
        // the peer itself.
        link_timeout: if matches!(spec, PortSpec::Memif { .. }) {
            timeout
        } else {
            StdDuration::from_secs(args.timeout.min(10))
        },
        queues,
        ..PortConfig::default()
    };
    // An af_xdp port is created without privilege; its socket and XDP program, at start, are
    // not.
    let port = DpdkPort::new(&eal, id, pool.clone(), &config).map_err(|e| {
        match kind.missing_privilege() {
            Some(why) => anyhow!("bringing up DPDK port {label}: {why} ({e})"),
            None => anyhow::Error::new(e).context(format!("bringing up DPDK port {label}")),
        }
    })?;
    let mac = mac.unwrap_or_else(|| EthernetAddress(spec.host_mac(port.info().mac)));
    tracing::info!(port = %spec, %mac, %ip, queues, "port up");
    Ok(Device {
        port,
        pool,
        eal,
        mac,
        ip,
    })
}
