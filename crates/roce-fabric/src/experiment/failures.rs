//! A scenario's failures: cables going down and up (`link_events`), flapping cables, switch
//! reboots, lossy cables, planned maintenance drains and PFC storms, applied to a built fabric
//! by the names the topology gives.

use crate::limits::bounds::{at_most, excerpt, LimitError, MAX_FLAPS};
use serde::{Deserialize, Serialize};

use crate::engines::ScenarioEngine;
use crate::net::fabric::{Cable, Fabric};
use crate::net::topology::{End, Topology};
use crate::{HostId, SwitchId};
use roce_proto::time::{Duration, Instant};

/// A cable going down or up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEvent {
    /// One end (host or switch name).
    pub a: String,
    /// The other end.
    pub b: String,
    /// When, µs.
    pub at_us: f64,
    /// Up (true) or down.
    pub up: bool,
}

fn d_storm_priority() -> u8 {
    3
}

/// A failure a scenario injects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Failure {
    /// The cable between `a` and `b` goes down for `down_us`, up for `up_us`, `count` times,
    /// starting at `at_us`.
    Flap {
        /// One end (host or switch name).
        a: String,
        /// The other end.
        b: String,
        /// First down, µs.
        at_us: f64,
        /// Each down period, µs.
        down_us: f64,
        /// Each up period between downs, µs.
        up_us: f64,
        /// How many times it goes down.
        count: u32,
    },
    /// `switch` reboots at `at_us`: its buffer is lost, all its cables are down for `down_us`.
    Reboot {
        /// Switch name.
        switch: String,
        /// When, µs.
        at_us: f64,
        /// How long its ports stay down, µs.
        down_us: f64,
    },
    /// `switch` is drained for maintenance from `at_us` to `until_us`: its neighbours route
    /// around it (a routing convergence time after each end) while it forwards what still
    /// reaches it, so a reboot inside the window loses nothing.
    Drain {
        /// Switch name.
        switch: String,
        /// When the drain starts, µs.
        at_us: f64,
        /// When the switch returns to service, µs.
        until_us: f64,
    },
    /// The cable between `a` and `b` loses (and corrupts) this fraction of frames, both ways,
    /// for the whole run.
    Loss {
        /// One end.
        a: String,
        /// The other end.
        b: String,
        /// Probability a frame is lost.
        loss: f64,
        /// Probability a frame is corrupted (dropped by the receiver's FCS check).
        #[serde(default)]
        corrupt: f64,
    },
    /// `host`'s NIC sends PFC XOFF for `priority` (default 3) without a break from `at_us` to
    /// `until_us`, then XON, as a NIC whose receive side is stuck does: the switch port facing
    /// it cannot send that priority (a PFC storm, what a switch's `pfc_watchdog` is for).
    PfcStorm {
        /// Host name.
        host: String,
        /// When the storm starts, µs.
        at_us: f64,
        /// When it stops, µs.
        until_us: f64,
        /// The priority it pauses.
        #[serde(default = "d_storm_priority")]
        priority: u8,
    },
}

impl Failure {
    /// When it first hurts traffic, µs (`None` for a lossy cable, which hurts all along).
    pub fn starts_us(&self) -> Option<f64> {
        match self {
            Failure::Flap { at_us, .. }
            | Failure::Reboot { at_us, .. }
            | Failure::Drain { at_us, .. }
            | Failure::PfcStorm { at_us, .. } => Some(*at_us),
            Failure::Loss { .. } => None,
        }
    }

    /// Why it cannot be applied, if it cannot (timing and probabilities).
    pub fn check(&self) -> Result<(), FailureError> {
        let ok_time = |t: f64| t.is_finite() && t >= 0.0;
        match self {
            Failure::Flap {
                at_us,
                down_us,
                up_us,
                count,
                ..
            } if !(ok_time(*at_us) && ok_time(*down_us) && ok_time(*up_us)) || *count == 0 => {
                Err(FailureError::Flap)
            }
            Failure::Flap { count, .. } => at_most("flaps", u64::from(*count), MAX_FLAPS)
                .map(|_| ())
                .map_err(FailureError::TooManyFlaps),
            Failure::Reboot { at_us, down_us, .. } if !(ok_time(*at_us) && ok_time(*down_us)) => {
                Err(FailureError::Reboot)
            }
            Failure::Drain {
                at_us, until_us, ..
            } if !(ok_time(*at_us) && ok_time(*until_us) && until_us >= at_us) => {
                Err(FailureError::Drain)
            }
            Failure::Loss { loss, corrupt, .. }
                if !(0.0..=1.0).contains(loss) || !(0.0..=1.0).contains(corrupt) =>
            {
                Err(FailureError::Loss)
            }
            Failure::PfcStorm {
                at_us,
                until_us,
                priority,
                ..
            } if !(ok_time(*at_us) && ok_time(*until_us) && until_us >= at_us)
                || usize::from(*priority) >= roce_proto::wire::pfc::PRIORITIES =>
            {
                Err(FailureError::PfcStorm)
            }
            _ => Ok(()),
        }
    }
}

/// Why a failure or link event cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FailureError {
    /// A flap with a negative or non-finite time, or no flaps.
    #[error("flap needs at_us, down_us, up_us >= 0 and count >= 1")]
    Flap,
    /// More flaps than this build supports.
    #[error(transparent)]
    TooManyFlaps(LimitError),
    /// A reboot with a negative or non-finite time.
    #[error("reboot needs at_us, down_us >= 0")]
    Reboot,
    /// A drain with a negative or non-finite time, or one that ends before it starts.
    #[error("drain needs 0 <= at_us <= until_us")]
    Drain,
    /// A loss or corruption probability outside 0..=1.
    #[error("loss and corrupt must lie in 0..=1")]
    Loss,
    /// No cable between the two nodes named (as errors quote them).
    #[error("no cable between {a} and {b}")]
    NoCable {
        /// One end's name.
        a: String,
        /// The other end's name.
        b: String,
    },
    /// No switch of that name (as errors quote it).
    #[error("no switch {0}")]
    NoSwitch(String),
    /// A PFC storm that ends before it starts, with a bad time, or on a priority above 7.
    #[error("pfc_storm needs 0 <= at_us <= until_us and a priority in 0..=7")]
    PfcStorm,
    /// No host of that name (as errors quote it).
    #[error("no host {0}")]
    NoHost(String),
}

/// The instant `us` µs into the run.
fn at(us: f64) -> Instant {
    Instant::ZERO + Duration::from_micros_f64(us)
}

/// Finds the cable between the nodes named `a` and `b`.
fn cable<'c>(
    topo: &Topology,
    cables: &'c [Cable],
    a: &str,
    b: &str,
) -> Result<&'c Cable, FailureError> {
    let name_of = |e: End| match e {
        End::Host(h) => topo.hosts.get(h).map(|x| x.0.as_str()),
        End::Switch(s) => topo.switches.get(s).map(|x| x.0.as_str()),
    };
    topo.cables
        .iter()
        .zip(cables)
        .find(|((x, y, _), _)| {
            let (nx, ny) = (name_of(*x), name_of(*y));
            (nx == Some(a) && ny == Some(b)) || (nx == Some(b) && ny == Some(a))
        })
        .map(|(_, c)| c)
        .ok_or_else(|| FailureError::NoCable {
            a: excerpt(a),
            b: excerpt(b),
        })
}

/// The switch of `topo` named `name`.
fn switch_named(topo: &Topology, name: &str) -> Result<SwitchId, FailureError> {
    topo.switches
        .iter()
        .position(|(n, _)| n == name)
        .map(SwitchId)
        .ok_or_else(|| FailureError::NoSwitch(excerpt(name)))
}

/// Schedules `events` and `failures` on `fabric`, built from `topo` with `cables`.
pub(super) fn apply(
    fabric: &mut Fabric<ScenarioEngine>,
    topo: &Topology,
    cables: &[Cable],
    events: &[LinkEvent],
    failures: &[Failure],
) -> Result<(), FailureError> {
    let mut set = |c: &Cable, t: f64, up: bool| {
        fabric.schedule_link(c.ab, at(t), up);
        fabric.schedule_link(c.ba, at(t), up);
    };
    for ev in events {
        set(cable(topo, cables, &ev.a, &ev.b)?, ev.at_us, ev.up);
    }
    for f in failures {
        if let Failure::Flap {
            a,
            b,
            at_us,
            down_us,
            up_us,
            count,
        } = f
        {
            let c = cable(topo, cables, a, b)?;
            for i in 0..*count {
                let down = at_us + f64::from(i) * (down_us + up_us);
                set(c, down, false);
                set(c, down + down_us, true);
            }
        }
    }
    for f in failures {
        match f {
            Failure::Flap { .. } => {}
            Failure::Drain {
                switch,
                at_us,
                until_us,
            } => {
                let s = switch_named(topo, switch)?;
                fabric.schedule_drain(s, at(*at_us), true);
                fabric.schedule_drain(s, at(*until_us), false);
            }
            Failure::Reboot {
                switch,
                at_us,
                down_us,
            } => {
                let s = switch_named(topo, switch)?.0;
                let down = Duration::from_micros_f64(*down_us);
                fabric.schedule_reboot(SwitchId(s), at(*at_us), down);
            }
            Failure::Loss {
                a,
                b,
                loss,
                corrupt,
            } => {
                let c = *cable(topo, cables, a, b)?;
                fabric.set_link_loss(c.ab, *loss, *corrupt);
                fabric.set_link_loss(c.ba, *loss, *corrupt);
            }
            Failure::PfcStorm {
                host,
                at_us,
                until_us,
                priority,
            } => {
                let h = topo
                    .hosts
                    .iter()
                    .position(|(n, _)| n == host)
                    .ok_or_else(|| FailureError::NoHost(excerpt(host)))?;
                fabric.schedule_pfc_storm(HostId(h), *priority, at(*at_us), at(*until_us));
            }
        }
    }
    Ok(())
}
