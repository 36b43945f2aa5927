//! The CLI's port convention `null | ring | tap[:IFNAME] | af_packet:IFNAME | pci:ADDRESS`,
//! turned into EAL arguments (`--vdev=...` or `-a ADDRESS`) or hot-plug devargs.

use std::fmt;
use std::str::FromStr;

use super::error::DpdkError;

/// Which device a `--port` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortSpec {
    /// `net_null`: swallows TX, RX returns nothing.
    Null,
    /// `net_ring`: a port whose TX loops back to its own RX.
    Ring,
    /// `net_tap`: a kernel tap interface (named, or `dtapN` by default).
    Tap(Option<String>),
    /// `net_af_packet` on an existing kernel interface (e.g. a veth end).
    AfPacket(String),
    /// A PCI NIC by address (`0000:03:00.0`).
    Pci(String),
}

fn valid_ifname(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 16
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

impl FromStr for PortSpec {
    type Err = DpdkError;

    fn from_str(s: &str) -> Result<Self, DpdkError> {
        let bad = |why| DpdkError::BadPortSpec {
            spec: s.to_owned(),
            why,
        };
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        let ifname = |a: Option<&str>| match a {
            Some(n) if valid_ifname(n) => Ok(n.to_owned()),
            Some(_) => Err(bad("interface names are 1-15 of [A-Za-z0-9._-]")),
            None => Err(bad("this kind needs an interface name")),
        };
        match kind {
            "null" | "ring" if arg.is_some() => Err(bad("this kind takes no argument")),
            "null" => Ok(PortSpec::Null),
            "ring" => Ok(PortSpec::Ring),
            "tap" => Ok(PortSpec::Tap(arg.map(|a| ifname(Some(a))).transpose()?)),
            "af_packet" => Ok(PortSpec::AfPacket(ifname(arg)?)),
            "pci" => match arg {
                Some(a)
                    if !a.is_empty()
                        && a.bytes()
                            .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.') =>
                {
                    Ok(PortSpec::Pci(a.to_owned()))
                }
                _ => Err(bad("pci needs an address like 0000:03:00.0")),
            },
            _ => Err(bad("unknown port kind")),
        }
    }
}

/// Linux capability numbers (`linux/capability.h`).
const CAP_NET_ADMIN: u32 = 12;
const CAP_NET_RAW: u32 = 13;

/// Whether the effective capability set in a `/proc/<pid>/status` text holds capability `bit`;
/// `None` when the text has no readable `CapEff:` line.
fn has_capability(status: &str, bit: u32) -> Option<bool> {
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    let mask = u64::from_str_radix(hex, 16).ok()?;
    Some(mask.checked_shr(bit)? & 1 == 1)
}

impl PortSpec {
    /// The privilege this kind of port needs and this process lacks, said for the user: a tap
    /// needs CAP_NET_ADMIN to be created, af_packet CAP_NET_RAW for its socket. `None` when the
    /// process has it, the kind needs none, or the kernel does not tell.
    pub fn missing_privilege(&self) -> Option<&'static str> {
        let (bit, what) = match self {
            PortSpec::Tap(_) => (
                CAP_NET_ADMIN,
                "creating a tap interface needs CAP_NET_ADMIN, which this process lacks (run as root)",
            ),
            PortSpec::AfPacket(_) => (
                CAP_NET_RAW,
                "an af_packet socket needs CAP_NET_RAW, which this process lacks (run as root)",
            ),
            _ => return None,
        };
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        (has_capability(&status, bit) == Some(false)).then_some(what)
    }

    /// Device arguments for hot-plug (`Eal::probe_device`); `index` makes vdev names unique.
    pub fn devargs(&self, index: usize) -> String {
        match self {
            PortSpec::Null => format!("net_null{index}"),
            PortSpec::Ring => format!("net_ring{index}"),
            PortSpec::Tap(None) => format!("net_tap{index}"),
            PortSpec::Tap(Some(i)) => format!("net_tap{index},iface={i}"),
            PortSpec::AfPacket(i) => format!("net_af_packet{index},iface={i}"),
            PortSpec::Pci(a) => a.clone(),
        }
    }

    /// The MAC a host on this port uses, given the port's own. A tap or af_packet port's MAC is
    /// the kernel interface's (a bridge delivers frames for it to the kernel), so the host takes
    /// a different, locally administered one derived from it; a NIC's MAC is the host's.
    pub fn host_mac(&self, port_mac: [u8; 6]) -> [u8; 6] {
        let mut m = port_mac;
        if matches!(self, PortSpec::Tap(_) | PortSpec::AfPacket(_)) {
            m[0] = (m[0] | 0x02) & !0x01;
            m[1] ^= 0x5a;
        }
        m
    }

    /// EAL arguments that create the device at start.
    pub fn eal_args(&self, index: usize) -> Vec<String> {
        match self {
            PortSpec::Pci(a) => vec!["-a".into(), a.clone()],
            other => vec![format!("--vdev={}", other.devargs(index))],
        }
    }
}

impl fmt::Display for PortSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortSpec::Null => f.write_str("null"),
            PortSpec::Ring => f.write_str("ring"),
            PortSpec::Tap(None) => f.write_str("tap"),
            PortSpec::Tap(Some(i)) => write!(f, "tap:{i}"),
            PortSpec::AfPacket(i) => write!(f, "af_packet:{i}"),
            PortSpec::Pci(a) => write!(f, "pci:{a}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_specs_turn_into_vdev_args() {
        let cases = [
            ("null", "--vdev=net_null0"),
            ("ring", "--vdev=net_ring0"),
            ("tap", "--vdev=net_tap0"),
            ("tap:rtap1", "--vdev=net_tap0,iface=rtap1"),
            ("af_packet:veth0", "--vdev=net_af_packet0,iface=veth0"),
        ];
        for (spec, args) in cases {
            let parsed: PortSpec = spec.parse().unwrap_or(PortSpec::Null);
            assert_eq!(parsed.to_string(), spec);
            assert_eq!(parsed.eal_args(0), [args]);
        }
        assert_eq!(
            "pci:0000:03:00.0"
                .parse::<PortSpec>()
                .ok()
                .map(|p| p.eal_args(0)),
            Some(vec!["-a".to_owned(), "0000:03:00.0".to_owned()])
        );
    }

    #[test]
    fn capabilities_are_read_from_the_effective_set() {
        let root = "Name:\troce\nCapPrm:\t000001ffffffffff\nCapEff:\t000001fffeffffff\n";
        assert_eq!(has_capability(root, CAP_NET_ADMIN), Some(true));
        let user = "CapInh:\t0000000000000000\nCapEff:\t0000000000000000\n";
        assert_eq!(has_capability(user, CAP_NET_ADMIN), Some(false));
        let no_admin = "CapEff:\t000001fffeffefff\n";
        assert_eq!(has_capability(no_admin, CAP_NET_ADMIN), Some(false));
        assert_eq!(has_capability(no_admin, CAP_NET_RAW), Some(true));
        assert_eq!(has_capability("Name:\tx\n", CAP_NET_ADMIN), None);
        assert_eq!(PortSpec::Null.missing_privilege(), None);
    }

    #[test]
    fn hosts_on_kernel_ports_take_a_local_mac_of_their_own() {
        let port = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
        let tap = PortSpec::Tap(None).host_mac(port);
        assert_eq!(tap, [0x52, 0x0e, 0x00, 0x12, 0x34, 0x56]);
        assert_eq!(PortSpec::AfPacket("veth0".into()).host_mac(port), tap);
        assert_eq!(PortSpec::Pci("0000:03:00.0".into()).host_mac(port), port);
    }

    #[test]
    fn bad_port_specs_are_rejected() {
        for spec in [
            "",
            "nul",
            "null:x",
            "af_packet",
            "tap:",
            "tap:a b",
            "pci:",
            "pci:zz",
        ] {
            assert!(
                matches!(spec.parse::<PortSpec>(), Err(DpdkError::BadPortSpec { .. })),
                "{spec:?} accepted"
            );
        }
    }
}
