//! A topology written out: named switches, `hosts` hosts (`h0`, `h1`, ...) and the cables
//! between them by name, for shapes the built-in topologies do not have (several ECMP stages
//! in a row, parallel paths of different lengths).

use serde::{Deserialize, Serialize};

use super::fabric::LinkConfig;
use super::topology::{End, Topology};
use crate::limits::bounds::excerpt;
use crate::switching::switch::SwitchConfig;

/// One cable of a written-out topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CableSpec {
    /// One end: a switch name or `h<i>`.
    pub a: String,
    /// The other end.
    pub b: String,
    /// This cable's rate and delay, if not the topology's `link`.
    #[serde(default)]
    pub link: Option<LinkConfig>,
}

/// Why a written-out topology cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WiringError {
    /// A cable names an end that is neither a switch nor a host.
    #[error("cable end {name} is neither a switch nor one of the {hosts} hosts h0, h1, ...")]
    NoSuchEnd {
        /// The name, as errors quote it.
        name: String,
        /// Hosts in the topology.
        hosts: usize,
    },
}

/// The topology of `switches` (names), `hosts` hosts and `cables`, each cable `link` unless it
/// says otherwise; every switch gets `cfg`. Fails naming a cable end that does not exist.
pub fn build(
    switches: &[String],
    hosts: usize,
    cables: &[CableSpec],
    link: LinkConfig,
    cfg: &SwitchConfig,
) -> Result<Topology, WiringError> {
    let mut t = Topology::new();
    let hs: Vec<End> = (0..hosts).map(|i| t.host(format!("h{i}"))).collect();
    let ss: Vec<End> = switches.iter().map(|n| t.switch(n, cfg.clone())).collect();
    let end = |name: &str| -> Result<End, WiringError> {
        if let Some(i) = switches.iter().position(|n| n == name) {
            return Ok(ss[i]);
        }
        name.strip_prefix('h')
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| hs.get(i).copied())
            .ok_or_else(|| WiringError::NoSuchEnd {
                name: excerpt(name),
                hosts,
            })
    };
    for c in cables {
        let (a, b) = (end(&c.a)?, end(&c.b)?);
        t.cable(a, b, c.link.unwrap_or(link));
    }
    Ok(t)
}
