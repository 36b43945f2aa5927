//! What a run records while it goes, fed by the fabric and knowing nothing of it: the flow
//! meter on every host NIC ([`flow_meter`]), the capture of one port ([`capture`]), per-port and
//! per-host [`telemetry`], the time [`series`] and each host's [`cnp_delay`].

pub mod capture;
pub mod cnp_delay;
pub mod flow_meter;
pub mod series;
pub mod telemetry;
