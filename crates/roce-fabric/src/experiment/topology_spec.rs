//! The shape of a scenario's network, as its file writes it (`topology = { kind = ... }`).

use serde::{Deserialize, Serialize};

use std::path::PathBuf;

use crate::net::custom_topology::CableSpec;
use crate::net::fabric::LinkConfig;
use crate::net::fat_tree::ThreeTier;

fn d_one() -> usize {
    1
}

/// The shape of the network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Two hosts, one cable.
    BackToBack {
        /// The cable.
        link: LinkConfig,
    },
    /// `hosts` hosts on one switch (the last one's port is the bottleneck).
    Star {
        /// Host count.
        hosts: usize,
        /// Every cable.
        link: LinkConfig,
    },
    /// Two switches joined by `core`; hosts `0..left` on the first.
    Dumbbell {
        /// Hosts on switch 0.
        left: usize,
        /// Hosts on switch 1.
        right: usize,
        /// Host cables.
        link: LinkConfig,
        /// The switch-to-switch cable.
        core: LinkConfig,
    },
    /// Two-tier leaf-spine, per rail.
    LeafSpine {
        /// Leaves per rail.
        leaves: usize,
        /// Spines per rail.
        spines: usize,
        /// Servers per leaf.
        hosts_per_leaf: usize,
        /// Rails (NICs per server).
        #[serde(default = "d_one")]
        rails: usize,
        /// Host cables.
        link: LinkConfig,
        /// Leaf-spine cables.
        uplink: LinkConfig,
    },
    /// A three-tier fat tree ([`ThreeTier`]: `hosts_per_tor`, `tors`, `aggs`, `cores`, `pods`,
    /// `link`, `uplink`; the HPCC paper's 320 hosts are 16, 20, 20, 16, 5).
    ThreeTier(ThreeTier),
    /// The k-ary fat tree: k³/4 hosts, every cable `link`.
    FatTree {
        /// k (even).
        k: usize,
        /// Every cable.
        link: LinkConfig,
    },
    /// An HPCC simulator topology file (path relative to the working directory); hosts are
    /// its non-switch nodes in id order, and flow files name them by node id.
    HpccFile {
        /// The file.
        path: PathBuf,
        /// Loss probability of links whose line gives error rate 0 (the simulator's
        /// `ERROR_RATE_PER_LINK`).
        #[serde(default)]
        loss: f64,
    },
    /// Written out: named switches, hosts `h0..`, cables by name (see [`crate::net::custom_topology`]).
    Custom {
        /// Switch names.
        switches: Vec<String>,
        /// Host count.
        hosts: usize,
        /// Cables.
        cables: Vec<CableSpec>,
        /// Every cable's rate and delay unless the cable says otherwise.
        link: LinkConfig,
    },
}
