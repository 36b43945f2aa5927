//! The switch element and what it is made of: the sans-IO output-queued [`switch`] with its
//! [`thresholds`], egress [`sched`]uler and queues' [`sojourn`] times, the transmitter a switch port and a host NIC share,
//! what a switch reads from a [`frame`], the per-port and per-priority [`stats`], the PFC
//! [`watchdog`], the
//! scenario file's switch settings ([`switch_spec`]) and the real-time switch that runs the
//! element between ports ([`rt_switch`]).

pub mod frame;
pub(crate) mod port;
mod routes;
pub mod rt_switch;
pub mod sched;
pub mod sojourn;
pub mod stats;
pub mod switch;
mod switch_config;
pub mod switch_spec;
pub mod thresholds;
pub mod watchdog;
