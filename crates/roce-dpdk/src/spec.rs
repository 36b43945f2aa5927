//! The CLI's port convention `null | ring | tap[:IFNAME] | af_packet:IFNAME |
//! memif:SOCKET[,server|client] | af_xdp:IFNAME[,QUEUE][,prog=PATH] | pci:ADDRESS`, turned into
//! EAL arguments (`--vdev=...` or `-a ADDRESS`) or hot-plug devargs. Every user-given part is
//! checked to be a plain name or path, so a spec cannot smuggle extra devargs (`,key=value`) into
//! the driver; parsing makes relative paths absolute (it reads the working directory).

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
    /// `net_memif`: shared memory with another process, set up over a unix socket at a path.
    Memif {
        /// The socket's file path (`socket-abstract=no`), absolute.
        socket: String,
        /// Which end listens on the socket; `None` lets the command choose (a `roce perf`
        /// server listens, a client connects; elsewhere [`MemifRole::Server`]).
        role: Option<MemifRole>,
    },
    /// `net_af_xdp`: an AF_XDP socket on one queue of an existing kernel interface.
    AfXdp {
        /// The interface.
        iface: String,
        /// Its queue the socket binds to.
        queue: u16,
        /// The XDP program to attach instead of the default one that hands the socket every
        /// frame of the queue (an object file with an `xsks_map`; absolute), e.g. one that
        /// steers only RoCEv2 to us (`tools/xdp/roce_steer.c`).
        prog: Option<String>,
    },
    /// A PCI NIC by address (`0000:03:00.0`).
    Pci(String),
}

/// Which end of a memif connection a port is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemifRole {
    /// Creates the socket and waits for the client.
    Server,
    /// Connects to the server's socket (and creates the shared memory).
    Client,
}

impl MemifRole {
    /// Its name in the spec and in DPDK's devargs.
    pub fn as_str(self) -> &'static str {
        match self {
            MemifRole::Server => "server",
            MemifRole::Client => "client",
        }
    }
}

/// The longest socket path a unix socket address holds (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The longest XDP program path DPDK keeps (`PATH_MAX` with its NUL).
const MAX_PROG_PATH: usize = 4095;

/// A file path we hand DPDK in devargs, made absolute (DPDK resolves no relative memif socket:
/// it checks the directory with a bare `faccessat(-1, ...)`), if the path as given and as made
/// absolute (the working directory is input too) are at most `max` bytes that cannot end or
/// extend the devargs (`,` `=`) nor be read as anything but one argument (whitespace, quotes,
/// control characters).
fn devarg_path(path: &str, max: usize) -> Option<String> {
    let plain = |p: &str| {
        !p.is_empty()
            && p.len() <= max
            && !p.ends_with('/')
            && p.bytes().all(|b| {
                b.is_ascii_graphic() && !matches!(b, b',' | b'=' | b'"' | b'\'' | b'\\' | b';')
            })
    };
    if !plain(path) {
        return None;
    }
    std::path::absolute(path)
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
        .filter(|p| plain(p))
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
            "memif" => {
                let arg = arg.ok_or_else(|| bad("memif needs a socket path"))?;
                let (socket, role) = match arg.rsplit_once(',') {
                    Some((path, "server")) => (path, Some(MemifRole::Server)),
                    Some((path, "client")) => (path, Some(MemifRole::Client)),
                    Some(_) => return Err(bad("a memif role is server or client")),
                    None => (arg, None),
                };
                let socket = devarg_path(socket, MAX_SOCKET_PATH).ok_or_else(|| {
                    bad(
                        "a memif socket is a file path of at most 107 printable bytes \
                         (made absolute), without , = ; quotes or backslashes",
                    )
                })?;
                Ok(PortSpec::Memif { socket, role })
            }
            "af_xdp" => {
                let mut parts = arg.map(|a| a.split(',')).into_iter().flatten().peekable();
                let iface = ifname(parts.next())?;
                let queue = match parts.next_if(|p| !p.starts_with("prog=")) {
                    Some(q) if !q.is_empty() && q.bytes().all(|b| b.is_ascii_digit()) => q
                        .parse::<u16>()
                        .map_err(|_| bad("an af_xdp queue is a number 0-65535"))?,
                    Some(_) => return Err(bad("an af_xdp queue is a number 0-65535")),
                    None => 0,
                };
                let prog = match parts.next() {
                    Some(p) => {
                        let path = p
                            .strip_prefix("prog=")
                            .ok_or_else(|| bad("af_xdp takes IFNAME[,QUEUE][,prog=PATH]"))?;
                        Some(devarg_path(path, MAX_PROG_PATH).ok_or_else(|| {
                            bad("an XDP program is a file path of printable bytes, \
                                 without , = ; quotes or backslashes")
                        })?)
                    }
                    None => None,
                };
                if parts.next().is_some() {
                    return Err(bad("af_xdp takes IFNAME[,QUEUE][,prog=PATH]"));
                }
                Ok(PortSpec::AfXdp { iface, queue, prog })
            }
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
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

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
    /// needs CAP_NET_ADMIN to be created, af_packet CAP_NET_RAW for its socket, af_xdp
    /// CAP_NET_RAW for its socket and CAP_NET_ADMIN with CAP_BPF (or CAP_SYS_ADMIN) to load and
    /// attach its XDP program. `None` when the process has it, the kind needs none (memif needs
    /// only a writable socket directory), or the kernel does not tell.
    pub fn missing_privilege(&self) -> Option<&'static str> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        self.missing_privilege_in(&status)
    }

    /// [`PortSpec::missing_privilege`] for the `/proc/<pid>/status` text `status`.
    fn missing_privilege_in(&self, status: &str) -> Option<&'static str> {
        let lacks = |bit| has_capability(status, bit) == Some(false);
        match self {
            PortSpec::Tap(_) => lacks(CAP_NET_ADMIN).then_some(
                "creating a tap interface needs CAP_NET_ADMIN, which this process lacks (run as root)",
            ),
            PortSpec::AfPacket(_) => lacks(CAP_NET_RAW).then_some(
                "an af_packet socket needs CAP_NET_RAW, which this process lacks (run as root)",
            ),
            PortSpec::AfXdp { .. } => (lacks(CAP_NET_RAW)
                || lacks(CAP_NET_ADMIN)
                || (lacks(CAP_BPF) && lacks(CAP_SYS_ADMIN)))
            .then_some(
                "an af_xdp port needs CAP_NET_RAW for its socket and CAP_NET_ADMIN with CAP_BPF \
                 (or CAP_SYS_ADMIN) for its XDP program, which this process lacks (run as root)",
            ),
            _ => None,
        }
    }

    /// This spec with a memif port's role, when the spec leaves it open, set to `role`.
    #[must_use]
    pub fn with_default_role(self, role: MemifRole) -> PortSpec {
        match self {
            PortSpec::Memif { socket, role: None } => PortSpec::Memif {
                socket,
                role: Some(role),
            },
            other => other,
        }
    }

    /// Device arguments for hot-plug (`Eal::probe_device`); `index` makes vdev names unique.
    pub fn devargs(&self, index: usize) -> String {
        match self {
            PortSpec::Null => format!("net_null{index}"),
            PortSpec::Ring => format!("net_ring{index}"),
            PortSpec::Tap(None) => format!("net_tap{index}"),
            PortSpec::Tap(Some(i)) => format!("net_tap{index},iface={i}"),
            PortSpec::AfPacket(i) => format!("net_af_packet{index},iface={i}"),
            PortSpec::Memif { socket, role } => {
                let role = role.unwrap_or(MemifRole::Server).as_str();
                format!("net_memif{index},role={role},id=0,socket={socket},socket-abstract=no")
            }
            PortSpec::AfXdp { iface, queue, prog } => {
                let mut args =
                    format!("net_af_xdp{index},iface={iface},start_queue={queue},queue_count=1");
                if let Some(p) = prog {
                    args.push_str(",xdp_prog=");
                    args.push_str(p);
                }
                args
            }
            PortSpec::Pci(a) => a.clone(),
        }
    }

    /// The MAC a host on this port uses, given the port's own. A tap or af_packet port's MAC is
    /// the kernel interface's (a bridge delivers frames for it to the kernel), so the host takes
    /// a different, locally administered one derived from it. A NIC's MAC is the host's, and so
    /// is a memif port's (a point-to-point link to one other process, its MAC random per run)
    /// and an af_xdp port's (the interface's, whose frames on that queue reach us, not the
    /// kernel, or, with a steering XDP program, whose RoCEv2 frames do).
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
            PortSpec::Memif { socket, role: None } => write!(f, "memif:{socket}"),
            PortSpec::Memif {
                socket,
                role: Some(r),
            } => write!(f, "memif:{socket},{}", r.as_str()),
            PortSpec::AfXdp { iface, queue, prog } => {
                write!(f, "af_xdp:{iface}")?;
                if *queue != 0 {
                    write!(f, ",{queue}")?;
                }
                match prog {
                    Some(p) => write!(f, ",prog={p}"),
                    None => Ok(()),
                }
            }
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
            (
                "memif:/tmp/r/m.sock",
                "--vdev=net_memif0,role=server,id=0,socket=/tmp/r/m.sock,socket-abstract=no",
            ),
            (
                "memif:/tmp/m.sock,client",
                "--vdev=net_memif0,role=client,id=0,socket=/tmp/m.sock,socket-abstract=no",
            ),
            (
                "af_xdp:veth0",
                "--vdev=net_af_xdp0,iface=veth0,start_queue=0,queue_count=1",
            ),
            (
                "af_xdp:eth1,3",
                "--vdev=net_af_xdp0,iface=eth1,start_queue=3,queue_count=1",
            ),
            (
                "af_xdp:eth1,prog=/usr/lib/roce/roce_steer.o",
                "--vdev=net_af_xdp0,iface=eth1,start_queue=0,queue_count=1,\
                 xdp_prog=/usr/lib/roce/roce_steer.o",
            ),
            (
                "af_xdp:eth1,2,prog=/x.o",
                "--vdev=net_af_xdp0,iface=eth1,start_queue=2,queue_count=1,xdp_prog=/x.o",
            ),
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
    fn af_xdp_needs_raw_admin_and_bpf_or_sys_admin() {
        let xdp = PortSpec::AfXdp {
            iface: "veth0".into(),
            queue: 0,
            prog: None,
        };
        let caps = |bits: &[u32]| {
            let mask: u64 = bits.iter().map(|b| 1u64 << b).sum();
            format!("CapEff:\t{mask:016x}\n")
        };
        let all = [CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF];
        assert_eq!(xdp.missing_privilege_in(&caps(&all)), None);
        let old_kernel = [CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN];
        assert_eq!(xdp.missing_privilege_in(&caps(&old_kernel)), None);
        for lacking in [
            &[CAP_NET_RAW, CAP_BPF][..],
            &[CAP_NET_ADMIN, CAP_BPF],
            &[CAP_NET_ADMIN, CAP_NET_RAW],
        ] {
            let why = xdp.missing_privilege_in(&caps(lacking));
            assert!(
                why.is_some_and(|w| w.starts_with("an af_xdp port needs CAP_NET_RAW")),
                "{lacking:?}: {why:?}"
            );
        }
        let memif = PortSpec::Memif {
            socket: "/tmp/m.sock".into(),
            role: None,
        };
        assert_eq!(memif.missing_privilege_in(&caps(&[])), None);
    }

    #[test]
    fn a_relative_memif_socket_is_made_absolute() {
        let cwd = std::env::current_dir().unwrap_or_default();
        let cwd = cwd.to_str().unwrap_or_default();
        let spec: PortSpec = "memif:run/m.sock,client".parse().unwrap_or(PortSpec::Null);
        assert_eq!(spec.to_string(), format!("memif:{cwd}/run/m.sock,client"));
        assert_eq!(
            spec.devargs(1),
            format!("net_memif1,role=client,id=0,socket={cwd}/run/m.sock,socket-abstract=no")
        );
        let xdp: PortSpec = "af_xdp:veth0,prog=steer.o"
            .parse()
            .unwrap_or(PortSpec::Null);
        assert_eq!(xdp.to_string(), format!("af_xdp:veth0,prog={cwd}/steer.o"));
        // Too long once the working directory is in front of it.
        let long = format!("memif:{}", "s".repeat(107 - cwd.len()));
        assert!(long.parse::<PortSpec>().is_err());
    }

    #[test]
    fn an_open_memif_role_takes_the_commands_default() {
        let open: PortSpec = "memif:/tmp/m.sock".parse().unwrap_or(PortSpec::Null);
        let client = open.clone().with_default_role(MemifRole::Client);
        assert_eq!(client.to_string(), "memif:/tmp/m.sock,client");
        let fixed: PortSpec = "memif:/tmp/m.sock,server".parse().unwrap_or(PortSpec::Null);
        assert_eq!(fixed.clone().with_default_role(MemifRole::Client), fixed);
        assert_eq!(
            PortSpec::Ring.with_default_role(MemifRole::Client),
            PortSpec::Ring
        );
        assert_eq!(
            open.devargs(2),
            "net_memif2,role=server,id=0,socket=/tmp/m.sock,socket-abstract=no"
        );
    }

    #[test]
    fn hosts_on_kernel_ports_take_a_local_mac_of_their_own() {
        let port = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
        let tap = PortSpec::Tap(None).host_mac(port);
        assert_eq!(tap, [0x52, 0x0e, 0x00, 0x12, 0x34, 0x56]);
        assert_eq!(PortSpec::AfPacket("veth0".into()).host_mac(port), tap);
        assert_eq!(PortSpec::Pci("0000:03:00.0".into()).host_mac(port), port);
        let memif = PortSpec::Memif {
            socket: "m.sock".into(),
            role: Some(MemifRole::Client),
        };
        assert_eq!(memif.host_mac(port), port);
        let xdp = PortSpec::AfXdp {
            iface: "veth0".into(),
            queue: 1,
            prog: None,
        };
        assert_eq!(xdp.host_mac(port), port);
    }

    #[test]
    fn bad_port_specs_are_rejected() {
        for spec in &[
            "",
            "nul",
            "null:x",
            "af_packet",
            "tap:",
            "tap:a b",
            "pci:",
            "pci:zz",
            "memif",
            "memif:",
            "memif:,server",
            "memif:/tmp/m.sock,master",
            "memif:/tmp/m.sock,server,client",
            "memif:/tmp/m.sock,role=client",
            "memif:/tmp/m.sock,zero-copy=yes",
            "memif:/tmp/a=b",
            "memif:/tmp/a b",
            "memif:/tmp/a;b",
            "memif:/tmp/a\"b",
            "memif:/tmp/a\nb",
            "memif:/tmp/dir/",
            &format!("memif:/{}", "s".repeat(107)),
            "af_xdp",
            "af_xdp:",
            "af_xdp:,1",
            "af_xdp:veth0,",
            "af_xdp:veth0,-1",
            "af_xdp:veth0,+1",
            "af_xdp:veth0,65536",
            "af_xdp:veth0,1,2",
            "af_xdp:veth0,xdp_prog=/x.o",
            "af_xdp:veth0,prog=",
            "af_xdp:veth0,prog=/x.o,1",
            "af_xdp:veth0,1,prog=/x.o,busy_budget=0",
            "af_xdp:veth0,prog=/x=y.o",
            "af_xdp:veth0,prog=/x y.o",
            "af_xdp:veth0,busy_budget=0",
            "af_xdp:veth0;x",
        ] {
            let spec: &str = spec;
            assert!(
                matches!(spec.parse::<PortSpec>(), Err(DpdkError::BadPortSpec { .. })),
                "{spec:?} accepted"
            );
        }
    }
}
