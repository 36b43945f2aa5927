//! How frames reach the shard owning their QP on a port with several queue pairs. Where the
//! device takes `rte_flow` rules that send IPv4/UDP-4791 frames to a queue by their UDP source
//! port, a rule per peer QP steers its frames to the right queue in the device (the peer's source
//! port is a function of its QPN, known when the QP connects); everything else (rules refused,
//! unknown source ports, ARP) lands on some queue and the software dispatcher
//! ([`crate::lcore::dispatch`]) hands it over. [`Steering::probe`] finds out which, once, when
//! the port starts; `roce port info --cores N` reports it.

use std::ffi::CStr;
use std::fmt;
use std::net::Ipv4Addr;
use std::ptr::NonNull;

use dpdk_bindings as sys;

use crate::error::DpdkError;
use crate::port::DpdkPort;

/// The source port of the rule a probe creates and destroys (the first RoCE source port).
const PROBE_SPORT: u16 = 0xc000;

/// How a port's frames reach their shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Steering {
    /// One queue pair: nothing to steer.
    Single,
    /// The device takes flow rules on the UDP source port; unmatched frames go through the
    /// software dispatcher.
    FlowRules,
    /// The device has several queues but no usable flow rules: the software dispatcher moves
    /// every frame that lands on the wrong queue. Why rules are out, as DPDK said it.
    Software(String),
}

impl Steering {
    /// Finds out what `port` (queue 0 of a started device with all its queues) can do.
    pub fn probe(port: &DpdkPort) -> Steering {
        if port.queue_count() <= 1 {
            return Steering::Single;
        }
        // Validation alone is not enough: net_tap validates in the PMD, and its kernel may still
        // refuse the rule (no flower classifier). A rule created and destroyed again is proof.
        match flow_rule(port.id(), None, PROBE_SPORT, u16::MAX, 1, false)
            .and_then(|_| flow_rule(port.id(), None, PROBE_SPORT, u16::MAX, 1, true))
        {
            Ok(Some(flow)) => {
                let _ = FlowRule {
                    port: port.id(),
                    flow,
                }
                .destroy();
                Steering::FlowRules
            }
            Ok(None) => Steering::Software("rte_flow_create returned no flow".into()),
            Err(why) => Steering::Software(why),
        }
    }

    /// A short name: `single-queue`, `flow-rules`, `software`.
    pub fn name(&self) -> &'static str {
        match self {
            Steering::Single => "single-queue",
            Steering::FlowRules => "flow-rules",
            Steering::Software(_) => "software",
        }
    }
}

impl fmt::Display for Steering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Steering::Single => f.write_str("single-queue (one queue pair, nothing to steer)"),
            Steering::FlowRules => f.write_str(
                "flow-rules (rte_flow on the UDP source port; the software dispatcher for the rest)",
            ),
            Steering::Software(why) => write!(
                f,
                "software (the dispatcher hands frames to the shard owning their QPN; no rte_flow: {why})"
            ),
        }
    }
}

/// A flow rule in the device; it lives until the device closes.
#[derive(Debug)]
pub struct FlowRule {
    port: u16,
    flow: NonNull<sys::rte_flow>,
}

// SAFETY: a flow handle is an opaque token DPDK accepts from any thread (ethdev serialises flow
// operations on a port).
unsafe impl Send for FlowRule {}

impl FlowRule {
    /// Destroys the rule now (else it goes with the device).
    pub fn destroy(self) -> Result<(), DpdkError> {
        // SAFETY: `flow` was created on `port` and is destroyed once (self is consumed).
        let ret = unsafe { sys::roce_shim_flow_destroy(self.port, self.flow.as_ptr()) };
        crate::error::check("rte_flow_destroy", ret).map(|_| ())
    }
}

/// Steers RoCEv2 frames from `peer` (when given) with UDP source port `sport` to queue `queue`
/// of `port`'s device.
pub fn steer_udp_source(
    port: &DpdkPort,
    peer: Option<Ipv4Addr>,
    sport: u16,
    queue: u16,
) -> Result<FlowRule, DpdkError> {
    match flow_rule(port.id(), peer, sport, u16::MAX, queue, true) {
        Ok(Some(flow)) => Ok(FlowRule {
            port: port.id(),
            flow,
        }),
        Ok(None) => Err(DpdkError::Flow("rte_flow_create returned no flow".into())),
        Err(why) => Err(DpdkError::Flow(why)),
    }
}

/// Validates (`create` false) or creates a rule; DPDK's complaint as text on failure.
fn flow_rule(
    port: u16,
    peer: Option<Ipv4Addr>,
    sport: u16,
    mask: u16,
    queue: u16,
    create: bool,
) -> Result<Option<NonNull<sys::rte_flow>>, String> {
    let mut err = [0 as core::ffi::c_char; 256];
    let mut out: *mut sys::rte_flow = std::ptr::null_mut();
    let ip = peer.map_or(0, |ip| u32::from_ne_bytes(ip.octets()));
    // SAFETY: valid port id; `out` and `err` are valid out pointers, `err` holds 256 bytes.
    let ret = unsafe {
        sys::roce_shim_flow_udp_sport(
            port,
            ip,
            sport,
            mask,
            queue,
            i32::from(create),
            &mut out,
            err.as_mut_ptr(),
            err.len() as u32,
        )
    };
    if ret < 0 {
        // SAFETY: the shim wrote a NUL-terminated message into `err` (snprintf).
        let why = unsafe { CStr::from_ptr(err.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        return Err(if why.is_empty() {
            format!("error {ret}")
        } else {
            why
        });
    }
    Ok(NonNull::new(out))
}
