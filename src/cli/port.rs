//! `roce port ...`: look at the DPDK ports EAL finds, and measure what two of them move as bare
//! frames ([`bench`]). Not here: RoCE traffic (see `roce demo`, `roce perf`).

mod bench;

use std::io::Write;

use clap::{Args, Subcommand};
use std::sync::Arc;

use roce_dpdk::lcore::Cores;
use roce_dpdk::steer::Steering;
use roce_dpdk::{
    DpdkError, DpdkPort, Eal, EalConfig, MemifRole, Mempool, MempoolConfig, PortConfig, PortInfo,
    PortSpec,
};

/// `roce port` subcommands.
#[derive(Subcommand, Debug)]
pub enum PortCommand {
    /// List the ports with driver, MAC, MTU, link and offloads.
    Info(InfoArgs),
    /// Bare Ethernet frames between two processes (as perftest's raw_ethernet_bw): one side
    /// `--send`s, the other counts and times them.
    Bench(bench::BenchArgs),
}

/// Arguments of `roce port info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// EAL arguments, e.g. "-l 0 --no-huge --vdev=net_ring0" (defaults are added: --no-huge
    /// without hugepages, --in-memory, -d <Debian PMD dir>).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub eal: String,
    /// Ports to create: null | ring | tap[:IFNAME] | af_packet:IFNAME |
    /// memif:SOCKET[,server|client] | af_xdp:IFNAME[,QUEUE][,prog=PATH] | pci:ADDRESS
    /// (repeatable).
    #[arg(long = "port")]
    pub ports: Vec<PortSpec>,
    /// Also bring each port up with one queue pair per lcore (a count, or CPUs like 0,2-3) and
    /// report how frames would reach their lcore (flow rules or the software dispatcher).
    #[arg(long, alias = "lcores")]
    pub cores: Option<Cores>,
}

/// Runs a `roce port` subcommand, writing to `out`.
pub fn run(cmd: PortCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    match cmd {
        PortCommand::Info(args) => info(&args, out),
        PortCommand::Bench(args) => bench::run(&args, out),
    }
}

/// The user's `--eal` arguments with EAL's start-up notices turned down (they would bury a
/// one-line error) unless the user chose a `--log-level` of their own.
pub fn quiet_eal_args(user: &str) -> String {
    if user.contains("--log-level") {
        user.to_owned()
    } else {
        format!("--log-level=3 {user}")
    }
}

fn info(args: &InfoArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    for spec in &args.ports {
        // A memif server's socket path must be free (a client is not brought up here, so it
        // need not wait for its server).
        if !matches!(
            spec,
            PortSpec::Memif {
                role: Some(MemifRole::Client),
                ..
            }
        ) {
            roce_dpdk::memif::prepare(spec, std::time::Duration::ZERO)
                .map_err(|e| anyhow::anyhow!("--port {spec}: {e}"))?;
        }
    }
    let mut eal_args = quiet_eal_args(&args.eal);
    for (i, spec) in args.ports.iter().enumerate() {
        for a in spec.eal_args(i) {
            eal_args.push(' ');
            eal_args.push_str(&shlex::try_quote(&a).unwrap_or_default());
        }
    }
    let eal = match Eal::init(&EalConfig::new(eal_args)) {
        Ok(eal) => eal,
        Err(DpdkError::NoPorts) => {
            writeln!(out, "0 ports")?;
            for spec in &args.ports {
                if let Some(why) = spec.missing_privilege() {
                    anyhow::bail!("--port {spec}: {why}");
                }
            }
            if let Some(spec) = args.ports.first() {
                anyhow::bail!(
                    "--port {spec}: DPDK did not find this port; {}",
                    DpdkError::NoPorts
                );
            }
            anyhow::bail!("{}", DpdkError::NoPorts);
        }
        Err(e) => return Err(e.into()),
    };
    let ids = eal.port_ids();
    writeln!(
        out,
        "{} port(s); EAL args: {}",
        ids.len(),
        eal.args().join(" ")
    )?;
    for &id in &ids {
        match eal.port_info(id) {
            Ok(info) => writeln!(out, "{}", describe(&info))?,
            Err(e) => writeln!(out, "port {id}: {e}")?,
        }
    }
    if let Some(cores) = &args.cores {
        let pool = Arc::new(Mempool::new(&eal, &MempoolConfig::default())?);
        for id in ids {
            writeln!(
                out,
                "port {id} with {} lcores: {}",
                cores.len(),
                steering(&eal, id, &pool, cores)
            )?;
        }
    }
    Ok(())
}

/// How frames of port `id` would reach `cores` lcores: the port brought up with one queue pair
/// per lcore and probed (then stopped again).
fn steering(eal: &Eal, id: u16, pool: &Arc<Mempool>, cores: &Cores) -> String {
    let config = PortConfig {
        queues: u16::try_from(cores.len()).unwrap_or(u16::MAX),
        link_timeout: std::time::Duration::ZERO,
        ..PortConfig::default()
    };
    match DpdkPort::new(eal, id, pool.clone(), &config) {
        Ok(port) => format!("steering={}", Steering::probe(&port)),
        Err(e) => format!("cannot start: {e}"),
    }
}

fn describe(p: &PortInfo) -> String {
    let m = p.mac;
    let offloads = p.offloads.names();
    format!(
        "port {} {} driver={} mac={:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} mtu={} (range {}..={}) link={} speed={}Mb/s{} socket={} queues={}rx/{}tx offloads={}",
        p.id,
        p.name,
        p.driver,
        m[0], m[1], m[2], m[3], m[4], m[5],
        p.mtu,
        p.min_mtu,
        p.max_mtu,
        if p.link.up { "up" } else { "down" },
        p.link.speed_mbps,
        if p.link.full_duplex { " full-duplex" } else { "" },
        p.socket,
        p.max_rx_queues,
        p.max_tx_queues,
        if offloads.is_empty() { "none".to_owned() } else { offloads.join(",") },
    )
}
