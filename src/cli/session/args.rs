//! The DPDK port options `roce perf`, `roce perf verbs-peer` and `roce pingpong` share, read into
//! what the rest of the session needs: our addresses, where a server listens, the fault knobs
//! and where starting PSNs come from. Not here: opening the port ([`super::device`]), the TCP
//! exchange ([`super::exchange`]).

use std::net::{IpAddr, Ipv4Addr, UdpSocket};

use anyhow::anyhow;
use clap::Args;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use roce_dpdk::lcore::Cores;
use roce_dpdk::PortSpec;
use roce_proto::psn::{Psn, PSN_MASK};
use roce_proto::verbs::Mtu;
use roce_proto::wire::{EthernetAddress, Ipv4Cidr};

use crate::cli::faults::FaultArgs;
use crate::cli::metrics::MetricsArgs;

/// The DPDK port options of `roce perf` and `roce pingpong`.
#[derive(Args, Debug, Clone)]
pub struct PortArgs {
    /// DPDK port: null | ring | tap[:IFNAME] | af_packet:IFNAME | memif:SOCKET[,server|client] |
    /// af_xdp:IFNAME[,QUEUE][,prog=PATH] | pci:ADDRESS (see docs/port.md).
    #[arg(long, default_value = "tap")]
    pub port: PortSpec,
    /// A raw DPDK virtual device instead of --port (e.g. "net_tap0,iface=t0"; becomes
    /// --vdev=SPEC, and the port it creates is used).
    #[arg(long, conflicts_with = "port")]
    pub vdev: Option<String>,
    /// Extra EAL arguments (e.g. "-l 1"; --no-huge/--in-memory/-d are added when needed).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub eal: String,
    /// perftest's GID index (-x). Accepted for command-line compatibility: a roce port has one
    /// GID, the one built from --ip (IPv4-mapped for IPv4), whatever the index.
    #[arg(short = 'x', long = "gid-index", default_value_t = 0)]
    pub gid_index: u32,
    /// Our IPv4 address on the port, ADDR/LEN (e.g. 198.18.0.1/15).
    #[arg(long)]
    pub ip: String,
    /// Our MAC address (default: the port's).
    #[arg(long)]
    pub mac: Option<String>,
    /// The peer's MAC address (default: resolved with ARP).
    #[arg(long)]
    pub peer_mac: Option<String>,
    /// Server: the address to listen on for the TCP exchange (default: this host's address on
    /// --ip's network, else 127.0.0.1; 0.0.0.0 listens on every interface and says so).
    #[arg(long)]
    pub bind: Option<IpAddr>,
    /// Seconds any single wait may last (TCP connect/accept, ARP, each whole message of the
    /// peer; at most a day).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub timeout: u64,
    /// Fault injection on our port, and the seed of it and of the starting PSNs.
    #[command(flatten)]
    pub faults: FaultArgs,
    /// Lcores: a count (2) or CPUs (0,2-3). With more than one, the port gets a queue pair per
    /// lcore and the QPs (`-q`) are spread over them (bandwidth tests).
    #[arg(long, alias = "lcores", default_value = "1")]
    pub cores: Cores,
    /// Live metrics.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// Starting PSNs: unpredictable to anyone off the host (from the OS-seeded CSPRNG, so a blind
/// peer cannot guess the window of a QP), or reproducible from `--seed`.
pub struct PsnSource(StdRng);

impl PsnSource {
    /// From `seed`, or from the OS when there is none.
    pub fn new(seed: Option<u64>) -> Self {
        // Its own stream: the fault injector draws from the same seed.
        const PSN_STREAM: u64 = 0x5053_4e73_7472_6d21;
        PsnSource(match seed {
            Some(seed) => StdRng::seed_from_u64(seed ^ PSN_STREAM),
            None => rand::make_rng(),
        })
    }

    /// The next starting PSN (24 bits).
    pub fn next_psn(&mut self) -> Psn {
        Psn::new(self.0.random_range(0..=PSN_MASK))
    }
}

impl PortArgs {
    /// `--ip`, parsed: our address and its network.
    pub fn ip(&self) -> anyhow::Result<Ipv4Cidr> {
        let text = &self.ip;
        Ipv4Cidr::parse_unicast(text)
            .map_err(|e| anyhow::Error::new(e).context(format!("--ip {text:?}")))
    }

    /// `--mac`, parsed.
    pub fn mac(&self) -> anyhow::Result<Option<EthernetAddress>> {
        self.mac.as_deref().map(unicast_mac).transpose()
    }

    /// `--peer-mac`, parsed.
    pub fn peer_mac(&self) -> anyhow::Result<Option<EthernetAddress>> {
        self.peer_mac.as_deref().map(unicast_mac).transpose()
    }

    /// Where starting PSNs come from (`--seed`).
    pub fn psns(&self) -> PsnSource {
        PsnSource::new(self.faults.seed)
    }

    /// Where a server listens: `--bind`, else this host's own address on the RoCE port's
    /// network (the kernel's source address toward `--ip`, when it lies in `--ip`'s prefix),
    /// else loopback. Never every interface unless asked, and then with a warning.
    pub fn bind_addr(&self) -> anyhow::Result<IpAddr> {
        if let Some(addr) = self.bind {
            return Ok(addr);
        }
        let net = self.ip()?;
        let local = local_addr_toward(net.address()).filter(|l| net.contains_addr(*l));
        Ok(IpAddr::V4(local.unwrap_or(Ipv4Addr::LOCALHOST)))
    }
}

/// A MAC address given on the command line, one a host may own.
fn unicast_mac(text: &str) -> anyhow::Result<EthernetAddress> {
    EthernetAddress::parse_unicast(text).map_err(|e| anyhow!("{text:?} is {e}"))
}

/// The address the kernel would send from toward `ip` (a UDP `connect` picks the route and
/// sends nothing).
fn local_addr_toward(ip: Ipv4Addr) -> Option<Ipv4Addr> {
    let sock = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    sock.connect((ip, 9)).ok()?;
    match sock.local_addr().ok()?.ip() {
        IpAddr::V4(v4) if !v4.is_unspecified() => Some(v4),
        _ => None,
    }
}

/// A path MTU given with `-m`.
pub fn parse_mtu(bytes: u32) -> anyhow::Result<Mtu> {
    Mtu::from_bytes(bytes)
        .ok_or_else(|| anyhow!("-m {bytes}: the MTU must be 256, 512, 1024, 2048 or 4096"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(ip: &str, bind: Option<&str>) -> PortArgs {
        PortArgs {
            port: PortSpec::Null,
            vdev: None,
            eal: String::new(),
            gid_index: 0,
            ip: ip.into(),
            bind: bind.map(|b| b.parse().unwrap()),
            mac: None,
            peer_mac: None,
            timeout: 1,
            faults: FaultArgs::default(),
            cores: Cores::one(),
            metrics: MetricsArgs::default(),
        }
    }

    #[test]
    fn seeded_psns_repeat_and_os_seeded_ones_do_not() {
        let draw = |seed| {
            let mut p = PsnSource::new(seed);
            [p.next_psn(), p.next_psn(), p.next_psn(), p.next_psn()]
        };
        assert_eq!(draw(Some(7)), draw(Some(7)));
        assert_ne!(draw(Some(7)), draw(Some(8)));
        // Four 24-bit draws from the OS-seeded generator repeat with odds of 2^-96.
        assert_ne!(draw(None), draw(None));
        assert!(draw(None).iter().all(|p| p.value() <= PSN_MASK));
    }

    #[test]
    fn default_bind_is_the_host_address_on_the_port_network_else_loopback() {
        // The kernel reaches 127.0.0.0/8 from 127.0.0.1: that is the port's network here.
        assert_eq!(
            args("127.0.0.9/8", None).bind_addr().unwrap(),
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        );
        // A /32 holds no address of this host: loopback, not every interface.
        assert_eq!(
            args("192.0.2.1/32", None).bind_addr().unwrap(),
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        );
        assert_eq!(
            args("192.0.2.1/24", Some("0.0.0.0")).bind_addr().unwrap(),
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        );
    }

    #[test]
    fn address_flags_say_which_flag_and_what_is_wrong() {
        let err = |r: anyhow::Result<_>| {
            r.map(|_: Option<EthernetAddress>| ())
                .map_err(|e| format!("{e:#}"))
        };
        let bad_ip = |ip| {
            args(ip, None)
                .ip()
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        };
        assert_eq!(
            bad_ip("1.2.3"),
            Err("--ip \"1.2.3\": not an IPv4 address: invalid IPv4 address syntax".into())
        );
        assert_eq!(
            bad_ip("198.18.0.1/40"),
            Err("--ip \"198.18.0.1/40\": prefix length must be 0..=32".into())
        );
        assert_eq!(
            bad_ip("224.0.0.1"),
            Err("--ip \"224.0.0.1\": not a unicast address".into())
        );
        let mut a = args("198.18.0.1/15", None);
        a.mac = Some("zz:00:00:00:00:01".into());
        a.peer_mac = Some("01:00:00:00:00:01".into());
        assert_eq!(
            err(a.mac()),
            Err("\"zz:00:00:00:00:01\" is not a MAC address".into())
        );
        assert_eq!(
            err(a.peer_mac()),
            Err("\"01:00:00:00:00:01\" is not a unicast MAC address".into())
        );
    }
}
