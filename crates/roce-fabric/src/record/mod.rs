//! What a run records while it goes, fed by the fabric and knowing nothing of it: the flow
//! meter on every host NIC ([`flow_meter`]), the capture of one port ([`capture`]), per-port and
//! per-host [`telemetry`] and the time [`series`].

pub mod capture;
pub mod flow_meter;
pub mod series;
pub mod telemetry;
