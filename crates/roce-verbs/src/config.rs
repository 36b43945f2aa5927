//! How the library finds its port without code changes: `ROCE_VERBS_*` environment variables,
//! or a small `key = value` file named by `ROCE_VERBS_CONFIG` (the variables win over the file).
//! The port follows the CLI's `--port` convention (`tap[:IFNAME]`, `af_packet:IFNAME`,
//! `memif:SOCKET[,server|client]`, `af_xdp:IFNAME[,QUEUE]`, `pci:ADDRESS`, `ring`, `null`; a memif
//! port without a role is the server, so two processes name their roles). Not here: starting
//! anything (see the progress thread).

use std::net::Ipv4Addr;
use std::path::PathBuf;

use roce_dpdk::PortSpec;
use roce_proto::verbs::{Mtu, Recovery};
use roce_proto::wire::{EthernetAddress, Ipv4Cidr};
use thiserror::Error;

/// Keys of the configuration; `ROCE_VERBS_<KEY>` in the environment, `key = value` in the file.
pub const KEYS: [&str; 11] = [
    "port", "ip", "mac", "eal", "cc", "counters", "core", "mtu", "idle_us", "timeout", "recovery",
];

/// Why the configuration cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A value does not parse.
    #[error("{key}={value:?}: {why}")]
    BadValue {
        /// The key (as the user wrote it: `ROCE_VERBS_IP` or `ip`).
        key: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// The configuration file cannot be read.
    #[error("cannot read {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line of the configuration file is not `key = value` with a known key.
    #[error("{path}:{line}: {why}")]
    BadLine {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// No IPv4 address was given.
    #[error("no IP address: set ROCE_VERBS_IP (e.g. 198.18.0.1) or `ip` in ROCE_VERBS_CONFIG")]
    NoIp,
}

/// The library's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The DPDK port (default `tap`).
    pub port: PortSpec,
    /// Our IPv4 address (GID index 1 is `::ffff:a.b.c.d`).
    pub ip: Ipv4Addr,
    /// Our MAC (default: derived from the port's, see the progress thread).
    pub mac: Option<EthernetAddress>,
    /// Extra EAL arguments.
    pub eal: String,
    /// Congestion control of every QP by name (`dcqcn-mlx`, ...; none by default).
    pub cc: Option<String>,
    /// File the counters are written to (every second and at exit).
    pub counters: Option<PathBuf>,
    /// CPU the progress thread is pinned to (default 0).
    pub core: usize,
    /// The port's active MTU as reported by `ibv_query_port` (default 1024).
    pub mtu: Mtu,
    /// Microseconds the progress thread sleeps once it has been idle for a while (0: never).
    pub idle_us: u64,
    /// Seconds to wait for the progress thread to start (EAL, port link).
    pub timeout: u64,
    /// Loss recovery of every QP whose program does not choose (`go-back-n`, the default, or
    /// `selective`: roce's selective repeat, which the peer must run too).
    pub recovery: Recovery,
}

impl Config {
    /// The configuration from `ROCE_VERBS_CONFIG` (if set) and the `ROCE_VERBS_*` variables.
    pub fn from_env() -> Result<Config, ConfigError> {
        let mut pairs = Vec::new();
        if let Some(path) = std::env::var_os("ROCE_VERBS_CONFIG") {
            let path = PathBuf::from(path);
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::File {
                path: path.clone(),
                source,
            })?;
            pairs.extend(parse_file(&path, &text)?);
        }
        for key in KEYS {
            let var = format!("ROCE_VERBS_{}", key.to_ascii_uppercase());
            if let Ok(value) = std::env::var(&var) {
                pairs.push((var, value));
            }
        }
        Config::from_pairs(&pairs)
    }

    /// The configuration from `(key, value)` pairs, later pairs winning; keys are `ip` or
    /// `ROCE_VERBS_IP` alike.
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<Config, ConfigError> {
        let mut c = Config {
            port: PortSpec::Tap(None),
            ip: Ipv4Addr::UNSPECIFIED,
            mac: None,
            eal: String::new(),
            cc: None,
            counters: None,
            core: 0,
            mtu: Mtu::Mtu1024,
            idle_us: 50,
            timeout: 20,
            recovery: Recovery::GoBackN,
        };
        let mut have_ip = false;
        for (key, value) in pairs {
            let bad = |why: &str| ConfigError::BadValue {
                key: key.clone(),
                value: value.clone(),
                why: why.to_owned(),
            };
            let name = key.strip_prefix("ROCE_VERBS_").unwrap_or(key);
            let v = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "port" => c.port = v.parse().map_err(|e| bad(&format!("{e}")))?,
                "ip" => {
                    // The prefix length is accepted and ignored: there is no routing.
                    c.ip = Ipv4Cidr::parse_unicast(v)
                        .map_err(|e| bad(&e.to_string()))?
                        .address();
                    have_ip = true;
                }
                "mac" => {
                    c.mac =
                        Some(EthernetAddress::parse_unicast(v).map_err(|e| bad(&e.to_string()))?)
                }
                "eal" => c.eal = v.to_owned(),
                "cc" => c.cc = (!v.is_empty() && v != "none").then(|| v.to_owned()),
                "counters" => c.counters = (!v.is_empty()).then(|| PathBuf::from(v)),
                "core" => c.core = v.parse().map_err(|_| bad("not a CPU number"))?,
                "mtu" => {
                    c.mtu = v
                        .parse()
                        .ok()
                        .and_then(Mtu::from_bytes)
                        .ok_or_else(|| bad("the MTU is 256, 512, 1024, 2048 or 4096"))?
                }
                "idle_us" => c.idle_us = v.parse().map_err(|_| bad("not a number"))?,
                "timeout" => c.timeout = v.parse().map_err(|_| bad("not a number of seconds"))?,
                "recovery" => {
                    c.recovery = match v {
                        "go-back-n" => Recovery::GoBackN,
                        "selective" => Recovery::SelectiveRepeat,
                        _ => return Err(bad("the recovery is go-back-n or selective")),
                    }
                }
                _ => return Err(bad("unknown key")),
            }
        }
        if !have_ip {
            return Err(ConfigError::NoIp);
        }
        Ok(c)
    }
}

/// `key = value` lines; `#` starts a comment; values may be double-quoted.
fn parse_file(path: &std::path::Path, text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| ConfigError::BadLine {
            path: path.to_owned(),
            line: i + 1,
            why: why.to_owned(),
        };
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| bad("expected `key = value`"))?;
        let k = k.trim();
        if !KEYS.contains(&k) {
            return Err(bad(&format!(
                "unknown key {k:?} (known: {})",
                KEYS.join(", ")
            )));
        }
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(v);
        out.push((k.to_owned(), v.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_is_go_back_n_unless_set_to_selective() {
        let base = [("ROCE_VERBS_IP", "198.18.0.1")];
        let c = Config::from_pairs(&pairs(&base)).unwrap();
        assert_eq!(c.recovery, Recovery::GoBackN);
        let sr = [base[0], ("ROCE_VERBS_RECOVERY", "selective")];
        let c = Config::from_pairs(&pairs(&sr)).unwrap();
        assert_eq!(c.recovery, Recovery::SelectiveRepeat);
        let bad = [base[0], ("ROCE_VERBS_RECOVERY", "maybe")];
        let e = Config::from_pairs(&pairs(&bad)).unwrap_err().to_string();
        assert!(e.contains("go-back-n or selective"), "{e}");
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn variables_and_file_keys_parse_with_defaults_elsewhere() {
        let c = Config::from_pairs(&pairs(&[
            ("ROCE_VERBS_PORT", "tap:rtap0"),
            ("ip", "198.18.0.1/15"),
            ("ROCE_VERBS_MAC", "02:00:00:00:00:01"),
            ("cc", "dcqcn-mlx"),
            ("ROCE_VERBS_MTU", "2048"),
        ]));
        let c = c.expect("valid configuration");
        assert_eq!(c.port, PortSpec::Tap(Some("rtap0".into())));
        assert_eq!(c.ip, Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(c.mac, Some(EthernetAddress([2, 0, 0, 0, 0, 1])));
        assert_eq!(c.cc.as_deref(), Some("dcqcn-mlx"));
        assert_eq!(c.mtu, Mtu::Mtu2048);
        assert_eq!((c.core, c.idle_us, c.counters), (0, 50, None));
    }

    #[test]
    fn later_pairs_win_and_bad_values_name_their_key() {
        let c = Config::from_pairs(&pairs(&[("ip", "198.18.0.1"), ("ip", "198.18.0.2")]));
        assert_eq!(c.map(|c| c.ip).ok(), Some(Ipv4Addr::new(198, 18, 0, 2)));
        let e = Config::from_pairs(&pairs(&[("ROCE_VERBS_IP", "1.2.3")]));
        assert_eq!(
            e.map_err(|e| e.to_string()).err().as_deref(),
            Some("ROCE_VERBS_IP=\"1.2.3\": not an IPv4 address")
        );
        assert!(matches!(
            Config::from_pairs(&pairs(&[("port", "tap")])),
            Err(ConfigError::NoIp)
        ));
        assert!(matches!(
            Config::from_pairs(&pairs(&[("ip", "198.18.0.1"), ("mtu", "1500")])),
            Err(ConfigError::BadValue { .. })
        ));
    }

    #[test]
    fn config_file_lines_are_key_value_with_comments() {
        let path = std::path::Path::new("roce.conf");
        let text = "# roce-verbs\nport = \"af_packet:veth0\"  # the veth\n\nip=198.18.0.9\n";
        let p = parse_file(path, text).expect("valid file");
        assert_eq!(
            p,
            pairs(&[("port", "af_packet:veth0"), ("ip", "198.18.0.9")])
        );
        let e = parse_file(path, "ip 198.18.0.1\n").map_err(|e| e.to_string());
        assert_eq!(
            e.err().as_deref(),
            Some("roce.conf:1: expected `key = value`")
        );
        assert!(parse_file(path, "colour = blue\n").is_err());
    }
}
