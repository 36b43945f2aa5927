//! A congestion controller's entry (name, aliases, description, default parameters) and the
//! table of the built-in ones. Registries ([`super::registry::CcRegistry`]) and
//! [`super::CcConfig::new`] look names up here.

use super::params::{CcKind, ParamInfo};
use super::{
    DcqcnParams, DctcpParams, HpccParams, NoParams, NsccParams, NvidiaRttParams,
    PatchedTimelyParams, ScaledDcqcnParams, SwiftParams, TimelyParams,
};

/// One registered controller (or preset of one).
#[derive(Debug)]
pub struct CcEntry {
    /// The name `--cc` and scenario files use, and reports print.
    pub name: &'static str,
    /// Other names accepted for it.
    pub aliases: &'static [&'static str],
    /// One line for `roce cc list`.
    pub about: &'static str,
    /// Its default parameters (units, help and values come with them).
    pub defaults: fn() -> Box<dyn CcKind>,
}

impl CcEntry {
    /// Whether `name` is this entry's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// Every parameter with its default, unit and help.
    pub fn params(&self) -> Vec<ParamInfo> {
        (self.defaults)().list()
    }
}

/// The built-in controllers, in the order `roce cc list` prints them.
pub static BUILTIN: &[CcEntry] = &[
    CcEntry {
        name: "none",
        aliases: &[],
        about: "no congestion control: always the line rate (congestion is left to PFC)",
        defaults: || Box::new(NoParams {}),
    },
    CcEntry {
        name: "dcqcn-paper",
        aliases: &[],
        about: "DCQCN with the SIGCOMM'15 paper's values (g = 1/256, T = K = 55 us, B = 10 MiB)",
        defaults: || Box::new(ScaledDcqcnParams::paper()),
    },
    CcEntry {
        name: "dcqcn-mlx",
        aliases: &["dcqcn"],
        about: "DCQCN with NVIDIA ConnectX firmware defaults (mlxconfig RPG_*/DCE_TCP_* values)",
        defaults: || Box::new(DcqcnParams::mlx()),
    },
    CcEntry {
        name: "dctcp",
        aliases: &[],
        about: "rate-based DCTCP (SIGCOMM'10): cut by alpha/2 per marked window, CNPs as ECN echo",
        defaults: || Box::new(DctcpParams::default()),
    },
    CcEntry {
        name: "timely",
        aliases: &[],
        about: "TIMELY (SIGCOMM'15): rate follows the RTT gradient of ACKs; ignores CNPs",
        defaults: || Box::new(TimelyParams::default()),
    },
    CcEntry {
        name: "patched-timely",
        aliases: &[],
        about: "patched TIMELY (CoNEXT'16): gradient weighed against the RTT error, a fixed point",
        defaults: || Box::new(PatchedTimelyParams::default()),
    },
    CcEntry {
        name: "hpcc",
        aliases: &[],
        about: "HPCC (SIGCOMM'19): rate from per-hop INT (queue, tx bytes, link rate); needs INT",
        defaults: || Box::new(HpccParams::default()),
    },
    CcEntry {
        name: "swift",
        aliases: &[],
        about:
            "Swift (SIGCOMM'20): AIMD window holding RTT near a scaled target; paces below 1 packet",
        defaults: || Box::new(SwiftParams::default()),
    },
    CcEntry {
        name: "nscc",
        aliases: &[],
        about:
            "UET NSCC (Ultra Ethernet 1.0): window from ECN marks and queueing delay, quick adapt",
        defaults: || Box::new(NsccParams::default()),
    },
    CcEntry {
        name: "nvidia-rtt",
        aliases: &["rtt-template"],
        about: "NVIDIA ZTR RTTCC (DOCA PCC rtt_template): rate AIMD once per RTT around base_rtt",
        defaults: || Box::new(NvidiaRttParams::default()),
    },
];
